"""The committed figures are what ``docs_tools/figures.py`` draws from the current library."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import figures
from docs_tools.project import DOCS


def test_committed_figures_are_up_to_date() -> None:
    assert figures.stale_figures() == [], "run: python3 dev.py figures"


def test_every_figure_is_used_by_a_page_in_both_languages() -> None:
    for lang in site_config.complete_locales():
        text = "".join(path.read_text(encoding="utf-8") for path in (DOCS / lang).rglob("*.md"))
        unused = [name for name in figures.FIGURE_MAKERS if f"../assets/figures/{name}" not in text]
        assert unused == [], f"{lang}: figures no page shows"


def test_a_changed_figure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(figures.FIGURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    assert figures.main(["--check"]) == 0
    (tmp_path / "head-splitting.svg").write_text("<svg/>", encoding="utf-8")
    (tmp_path / "causal-attn-weights.svg").unlink()
    assert figures.stale_figures() == ["causal-attn-weights.svg", "head-splitting.svg"]
    assert figures.main(["--check"]) == 1
