"""The committed figures are what ``scripts/make_figures.py`` draws from the current library."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make_figures.py"


@pytest.fixture(scope="module")
def make_figures():
    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_figures_are_up_to_date(make_figures) -> None:
    assert make_figures.stale_figures() == [], "run: python scripts/make_figures.py"


def test_every_figure_is_used_by_a_page_in_both_languages(make_figures) -> None:
    docs = SCRIPT.parent.parent / "docs"
    for lang in ("en", "zh"):
        text = "".join(path.read_text(encoding="utf-8") for path in (docs / lang).rglob("*.md"))
        unused = [name for name in make_figures.FIGURE_MAKERS if f"../assets/figures/{name}" not in text]
        assert unused == [], f"{lang}: figures no page shows"


def test_a_changed_figure_is_reported(make_figures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(make_figures.FIGURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.setattr(make_figures, "FIGURES", tmp_path)
    assert make_figures.main(["--check"]) == 0
    (tmp_path / "head-splitting.svg").write_text("<svg/>", encoding="utf-8")
    (tmp_path / "causal-attn-weights.svg").unlink()
    assert make_figures.stale_figures() == ["causal-attn-weights.svg", "head-splitting.svg"]
    assert make_figures.main(["--check"]) == 1
