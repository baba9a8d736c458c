"""What a reader's type checker makes of the library: mypy, with the project's settings, on calls a reader writes.

The library ships py.typed, so its annotations are part of what it promises. tests/lib/test_typing.py checks at
run time that they say what the code does; this test checks how mypy resolves a call with them, which needs
mypy (the test extra) and so cannot run beside the installed wheel.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TENSOR = "torch._tensor.Tensor"
PAIR = f"tuple[{TENSOR}, {TENSOR}]"

# Each line after the setup reveals one call's type: the call, and what mypy must say it returns.
CALLS = {
    "mha.forward(x)": [TENSOR],
    "mha.forward(x, need_weights=False)": [TENSOR],
    "mha.forward(x, need_weights=True)": [PAIR],
    "mha.forward(x, kpm, need_weights=True, use_cache=False)": [PAIR],
    # A flag known only at run time: either; mypy spells a union one of two ways, by version.
    "mha.forward(x, need_weights=flag)": [f"{TENSOR} | {PAIR}", f"Union[{TENSOR}, {PAIR}]"],
    # The module called as readers call it: the same overloads, through __call__.
    "mha(x)": [TENSOR],
    "mha(x, need_weights=True)": [PAIR],
    "mha(x, kpm, need_weights=False)": [TENSOR],
}

SETUP = """\
import torch

from attention_lib import MultiHeadAttention

mha = MultiHeadAttention(4, 6, 8, 0.0, num_heads=2)
x = torch.randn(2, 5, 4)
kpm = torch.zeros(2, 5, dtype=torch.bool)
flag = bool(torch.rand(()) < 0.5)
"""


def test_mypy_resolves_what_multi_head_attention_returns_from_need_weights(tmp_path: Path) -> None:
    """The overloads on ``forward``, and ``module(x, ...)`` through them: nn.Module.__call__, which torch
    annotates as returning Any, is ``forward`` for a type checker (``if TYPE_CHECKING`` in the class)."""
    snippet = tmp_path / "forward_types.py"
    snippet.write_text(SETUP + "".join(f"reveal_type({call})\n" for call in CALLS), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", ROOT / "pyproject.toml", snippet],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    revealed = re.findall(r'^.*forward_types\.py:\d+: note: Revealed type is "(.*)"$', result.stdout, re.M)
    assert len(revealed) == len(CALLS), result.stdout
    for (call, expected), found in zip(CALLS.items(), revealed, strict=True):
        assert found in expected, f"{call}: mypy says {found}, expected {' or '.join(expected)}"
