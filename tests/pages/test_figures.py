"""The committed figures are what ``docs_tools/figures.py`` draws from the current library."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import figures
from docs_tools.project import DOCS


def test_committed_figures_are_up_to_date() -> None:
    assert figures.stale_figures() == [], "run: python3 dev.py figures"


LIGHT_FIGURE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\(\.\./assets/figures/(?P<name>[\w.-]+)\.svg#only-light\)(?P<attrs>\{[^}]*\})?\n"
)


def test_every_figure_is_used_by_a_page_in_both_languages_and_both_palettes() -> None:
    for lang in site_config.complete_locales():
        text = "".join(path.read_text(encoding="utf-8") for path in (DOCS / lang).rglob("*.md"))
        unused = [name for name in figures.FIGURE_MAKERS if f"../assets/figures/{name}#only-light)" not in text]
        assert unused == [], f"{lang}: figures no page shows in the light palette"
        dark = [figures.dark_name(name) for name in figures.FIGURE_MAKERS]
        unused = [name for name in dark if f"../assets/figures/{name}#only-dark)" not in text]
        assert unused == [], f"{lang}: figures no page shows in the dark palette"
        # Each light figure is followed by its dark twin, with the same text alternative.
        for match in LIGHT_FIGURE.finditer(text):
            twin = f"![{match['alt']}](../assets/figures/{match['name']}-dark.svg#only-dark){match['attrs'] or ''}"
            assert text[match.end() :].startswith(twin), f"{lang}: {match['name']}.svg has no dark twin after it"


def test_the_dark_figure_has_no_white_slab_and_keeps_the_contrast() -> None:
    light = figures.causal_attn_weights()
    shaded = figures.dark(light)
    assert 'fill="#ffffff"/>' in light.split("\n")[2]  # the light figure's background
    assert "#ffffff" not in shaded
    # Ink on the light figure is dark; on the dark one, light: the lightness is mirrored.
    assert 'fill="#1f2937"' in light
    assert figures.COLOR.sub(figures._dark_color, "#1f2937") == "#d0d8e4"


def test_a_changed_figure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(figures.FIGURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    assert figures.main(["--check"]) == 0
    (tmp_path / "head-splitting.svg").write_text("<svg/>", encoding="utf-8")
    (tmp_path / "causal-attn-weights.svg").unlink()
    assert figures.stale_figures() == ["causal-attn-weights.svg", "head-splitting.svg"]
    assert figures.main(["--check"]) == 1
