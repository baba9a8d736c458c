"""What a reader sees of the translations' state, in the browser: an outdated page's banner names the sections
that changed in English and links each to its English section, and the status page counts each page's current
sections and names its reviewer. On a copy of the project with two changed sections (``outdated_site``,
tests/site/conftest.py), in both languages, on a phone and a desktop, in both palettes. Set SCREENSHOTS to a
folder to keep what the tests looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docs_tools import records

SCREENS = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}
ROOT = Path(__file__).resolve().parents[2]
SECTIONS = len(records.sections((ROOT / "docs" / "en" / "masks.md").read_text(encoding="utf-8")))
BANNER = ".translation-banner"


def _shot(page, name: str) -> None:
    folder = os.environ.get("SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def _open(page, url: str, width: str, load) -> None:
    page.set_viewport_size(SCREENS[width])
    load(page, url)


def _fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("width", SCREENS)
def test_the_banner_names_the_outdated_sections_and_each_link_opens_its_english_section(
    page, outdated_site: dict, load, width: str, dark_palette
) -> None:
    url = outdated_site["url"]
    assert outdated_site["changed"] == ["setup", "summary"]
    _open(page, url + "zh/masks/", width, load)
    banner = page.locator(BANNER)
    assert banner.is_visible()
    assert banner.get_attribute("data-translation") == "outdated"
    assert "下面这些小节可能已经过时" in banner.inner_text()
    links = banner.locator("li a")
    # The Chinese titles, in the page's order, each linked to the English page at that section.
    assert links.all_inner_texts() == ["准备工作", "小结"]
    assert [link.get_attribute("hreflang") for link in links.all()] == ["en", "en"]
    assert _fits(page)
    box = banner.bounding_box()
    assert box is not None
    assert box["y"] + box["height"] <= SCREENS[width]["height"]  # seen without scrolling
    _shot(page, f"banner-zh-{width}")
    with dark_palette(page):
        assert banner.is_visible()
        _shot(page, f"banner-zh-{width}-dark")
    # A reader follows the second link, as a reader does (a tap on a phone): the English page opens with that
    # section's heading at the top, under the header, not the section before it.
    links.nth(1).click()
    page.wait_for_url(url + "masks/#summary")
    page.evaluate("document.fonts.ready.then(() => null)")
    heading = page.locator("#summary")
    header = page.locator("header.md-header").bounding_box()
    top = heading.bounding_box()["y"]
    assert header["height"] - 2 <= top <= header["height"] + 80, (top, header)
    assert page.locator(BANNER).count() == 0  # the English page itself has none
    _shot(page, f"banner-followed-{width}")


@pytest.mark.parametrize("width", SCREENS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_status_page_counts_current_sections_and_names_the_reviewer(
    page, outdated_site: dict, load, width: str, lang: str, dark_palette
) -> None:
    prefix = "" if lang == "en" else "zh/"
    _open(page, outdated_site["url"] + prefix + "translation-status/", width, load)
    current = SECTIONS - len(outdated_site["changed"])
    masks = page.locator("tr", has=page.locator('a[href$="masks/"]')).filter(has_not_text="notebook").first
    counted = {"en": f"{current} of {SECTIONS} sections current", "zh": f"{SECTIONS} 个小节中 {current} 个已是最新"}
    state = {"en": "outdated", "zh": "待更新"}
    assert state[lang] in masks.inner_text()
    assert counted[lang] in masks.inner_text()
    stem, reviewer = outdated_site["reviewed"].removesuffix(".md"), outdated_site["reviewer"]
    reviewed = page.locator("tr", has=page.locator(f'a[href$="{stem}/"]'))
    by = {"en": f"reviewed by {reviewer}", "zh": f"已由 {reviewer} 审校"}
    assert by[lang] in reviewed.inner_text()
    assert page.locator("[data-reviewed-by]").count() == 1
    summary = page.locator("article li").first.inner_text()
    assert {"en": "reviewed by a second person: 1.", "zh": "1 个页面已审校。"}[lang] in summary
    assert _fits(page)  # the table scrolls inside its own box on a phone, the page does not
    masks.scroll_into_view_if_needed()
    _shot(page, f"status-{lang}-{width}")
    with dark_palette(page):
        _shot(page, f"status-{lang}-{width}-dark")
