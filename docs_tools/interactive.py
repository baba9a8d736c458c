"""Export the numbers the attention explorers start from, taken from ``attention_lib``.

    python3 dev.py figures           # rewrites these with the figures
    python3 dev.py figures --check   # exit 1 if they are out of date

A page shows an explorer with a line ``<div data-attention-explorer="NAME"></div>``; hooks/interactive.py
puts ``EXPLORERS[NAME]`` from ``docs_tools/data/explorers.json`` on it, and
``docs/assets/javascripts/explorer.js`` computes the scores, weights and context vectors from those inputs
and projection weights, in the browser, as the reader changes the controls. The inputs and weights are the
ones the page prints (the journey sentence, and the modules the page creates after its seed);
tests/site/test_interactive.py checks the browser's numbers against ``attention_lib`` for every combination
of the controls. The build itself imports no torch, so the numbers are written here and committed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import torch
from torch import nn

import attention_lib as al
from docs_tools import generated
from docs_tools.project import ROOT

DATA = ROOT / "docs_tools" / "data" / "explorers.json"
#: One explorer's numbers and settings, as explorer.js reads them from the JSON.
Explorer = dict[str, object]


def _rows(tensor: torch.Tensor) -> list[list[float]]:
    # float32 numbers as the doubles they are exactly: the browser computes in doubles from these.
    return tensor.detach().double().tolist()


def _explorer(
    inputs: torch.Tensor,
    projections: tuple[nn.Linear, nn.Linear, nn.Linear] | None,
    heads: list[int],
    **defaults: bool | int,
) -> Explorer:
    return {
        "words": list(al.JOURNEY_WORDS),
        "inputs": _rows(inputs),
        # nn.Linear's weight, (d_out, d_in): queries = inputs @ W_query.weight.T. None: the inputs themselves
        # are the queries, keys and values (self-attention without trainable weights).
        "W_query": None if projections is None else _rows(projections[0].weight),
        "W_key": None if projections is None else _rows(projections[1].weight),
        "W_value": None if projections is None else _rows(projections[2].weight),
        "heads": heads,
        "defaults": defaults,
    }


def weights() -> Explorer:
    """The attention weights page: scores are dot products of the inputs themselves."""
    return _explorer(al.journey_inputs(), None, [1], query=1, scale=False, causal=False, valid_len=6, num_heads=1)


def masks() -> Explorer:
    """The masks page: the queries, keys and values of the SelfAttentionV2 created after manual_seed(789)."""
    torch.manual_seed(789)
    sa_v2 = al.SelfAttentionV2(d_in=3, d_out=2)
    projections = (sa_v2.W_query, sa_v2.W_key, sa_v2.W_value)
    return _explorer(al.journey_inputs(), projections, [1], query=1, scale=True, causal=True, valid_len=6, num_heads=1)


def multi_head() -> Explorer:
    """The multi-head page: the projections created after manual_seed(123), d_in=3 and d_out=4, split into
    1, 2 or 4 heads (the page's example uses 2)."""
    torch.manual_seed(123)
    mha = al.MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)
    projections = (mha.W_query, mha.W_key, mha.W_value)
    return _explorer(
        al.journey_inputs(), projections, [1, 2, 4], query=1, scale=True, causal=True, valid_len=6, num_heads=2
    )


EXPLORERS: dict[str, Callable[[], Explorer]] = {"weights": weights, "masks": masks, "multi-head": multi_head}


def explorers_json() -> str:
    return json.dumps({name: make() for name, make in EXPLORERS.items()}, indent=1) + "\n"


def outputs() -> generated.Outputs:
    return {DATA: explorers_json}


def main(argv: list[str]) -> int:
    return generated.main(argv, outputs(), __doc__.splitlines()[0], "python3 dev.py figures")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
