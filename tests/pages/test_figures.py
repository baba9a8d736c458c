"""The committed figures are what ``docs_tools/figures/`` draws from the current library."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import figures, generated, interactive
from docs_tools.project import DOCS


def test_committed_figures_are_up_to_date() -> None:
    assert figures.stale_figures() == [], "run: python3 dev.py figures"


def test_the_explorers_numbers_are_up_to_date() -> None:
    """The numbers the interactive pieces start from (the explorers' inputs and weights, the steppers' steps) are
    what attention_lib gives now."""
    assert generated.stale(interactive.outputs()) == [], "run: python3 dev.py figures"


LIGHT_FIGURE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\(\.\./assets/figures/(?P<name>[\w.-]+)\.svg#only-light\)(?P<attrs>\{[^}]*\})?\n"
)


def test_every_figure_is_used_by_a_page_in_both_languages_and_both_palettes() -> None:
    for lang in site_config.complete_locales():
        text = "".join(path.read_text(encoding="utf-8") for path in (DOCS / lang).rglob("*.md"))
        names = [*figures.FIGURE_MAKERS, *figures.localized_names(lang)]
        unused = [name for name in names if f"../assets/figures/{name}#only-light)" not in text]
        assert unused == [], f"{lang}: figures no page shows in the light palette"
        dark = [figures.dark_name(name) for name in names]
        unused = [name for name in dark if f"../assets/figures/{name}#only-dark)" not in text]
        assert unused == [], f"{lang}: figures no page shows in the dark palette"
        # Each light figure is followed by its dark twin, with the same text alternative.
        for match in LIGHT_FIGURE.finditer(text):
            twin = f"![{match['alt']}](../assets/figures/{match['name']}-dark.svg#only-dark){match['attrs'] or ''}"
            assert text[match.end() :].startswith(twin), f"{lang}: {match['name']}.svg has no dark twin after it"
        # A figure drawn in each language is shown in the page's own.
        others = [
            name
            for other in site_config.complete_locales()
            if other != lang
            for name in figures.localized_names(other)
            if f"../assets/figures/{name}" in text or f"../assets/figures/{figures.dark_name(name)}" in text
        ]
        assert others == [], f"{lang}: pages show another language's figures"


def test_the_dark_figure_has_no_white_slab_and_keeps_the_contrast() -> None:
    light = figures.causal_attn_weights()
    shaded = figures.dark(light)
    assert 'fill="#ffffff"/>' in light.split("\n")[2]  # the light figure's background
    assert "#ffffff" not in shaded
    # Ink on the light figure is dark; on the dark one, light: the lightness is mirrored.
    assert 'fill="#1f2937"' in light
    assert figures.COLOR.sub(figures.dark_color, "#1f2937") == "#d0d8e4"


def test_a_changed_figure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(figures.FIGURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    assert figures.main(["--check"]) == 0
    (tmp_path / "head-splitting.svg").write_text("<svg/>", encoding="utf-8")
    (tmp_path / "causal-attn-weights.svg").unlink()
    assert figures.stale_figures() == ["causal-attn-weights.svg", "head-splitting.svg"]
    assert figures.main(["--check"]) == 1


#: How wide a figure is drawn on a 390 px phone: the article's width there (measured: 358 px); a wider
#: figure is scaled down to it, its text with it.
PHONE_WIDTH = 358
#: The smallest text a reader should have to read, in CSS pixels, once the figure is scaled.
SMALLEST_TEXT = 9


@pytest.mark.parametrize("name", list(figures.all_figures()))
def test_no_text_is_drawn_smaller_than_9px_on_a_phone(name: str) -> None:
    svg = figures.all_figures()[name]()
    width = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)"', svg)[1])
    # Every size the figure sets (on a text or on the group it inherits from); unset, a browser draws 16 px.
    sizes = [float(size) for size in re.findall(r'font-size="([\d.]+)"', svg)] or [16.0]
    smallest = min(sizes) * min(1.0, PHONE_WIDTH / width)
    assert smallest >= SMALLEST_TEXT, f"{name}: {min(sizes)} px text at {width:.0f} px wide is {smallest:.1f} px"


#: The pages that are not chapters: the home page and the reference pages.
NOT_CHAPTERS = {"index.md", "glossary.md", "api.md", "translation-status.md"}


@pytest.mark.parametrize("lang", site_config.complete_locales())
def test_every_chapter_shows_a_figure(lang: str) -> None:
    chapters = sorted(path for path in (DOCS / lang).glob("*.md") if path.name not in NOT_CHAPTERS)
    assert len(chapters) >= 16
    without = [path.name for path in chapters if "../assets/figures/" not in path.read_text(encoding="utf-8")]
    assert without == [], f"{lang}: chapters with no figure"
    assert len(figures.FIGURE_MAKERS) + len(figures.localized_names(lang)) >= 16
