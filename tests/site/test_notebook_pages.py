"""The notebook pages as a reader gets them (headless Chromium, both languages, phone and desktop): the notebook
uses the whole column, the page is light, the buttons and copy labels speak the page's language, each
language's notebook downloads under its own name, and the sitemap lists every notebook page.

What these pages are made of: mkdocs-jupyter's rendering, finished by hooks/notebooks_after_i18n.py, with the
buttons from overrides/main.html and the layout from docs/assets/stylesheets/notebook.css.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from docs_tools import config as site_config

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted(path.stem for path in (DOCS / "en" / "notebooks").glob("*.ipynb"))
LANGUAGES = tuple(site_config.complete_locales())  # mkdocs.yml: English and every complete translation
PAGES = [(lang, name) for lang in LANGUAGES for name in NOTEBOOKS]
IDS = [f"{lang}/{name}" for lang, name in PAGES]

#: What a reader sees and a screen reader says, per language. The copy labels are Material's own
#: (partials/languages/), as on the chapter pages' code blocks.
WORDS = {
    "en": {
        "colab": "Open in Colab",
        "download": "Download notebook",
        "copy": "Copy to clipboard",
        "copied": "Copied to clipboard",
    },
    "zh": {"colab": "在 Colab 中打开", "download": "下载 notebook", "copy": "复制", "copied": "已复制"},
}
HAN = re.compile(r"[\u4e00-\u9fff]")
#: The most inline CSS a notebook page may carry (a cell's output may bring a little of its own).
INLINE_CSS_LIMIT = 4096


def _url(lang: str, name: str) -> str:
    return site_config.url(lang, f"notebooks/{name}.ipynb")


def _on(*widths: str):
    """Run the test on every notebook page, on these screens (conftest.py's ``visited``: a page is loaded once
    for all the tests that look at it)."""
    pages = [(_url(lang, name), width) for width in widths for lang, name in PAGES]
    return pytest.mark.parametrize("visited", pages, indirect=True)


def _name(visited) -> str:
    return visited.url.rstrip("/").rsplit("/", 1)[-1]


def _in_language(text: str, lang: str) -> bool:
    return bool(HAN.search(text)) == (lang == "zh")


# ---------------------------------------------------------------------------------------------------
# Width: the notebook takes the whole column; nothing scrolls the page sideways on a phone
# ---------------------------------------------------------------------------------------------------
WIDTHS = """() => {
  const article = document.querySelector("article.md-content__inner");
  const style = getComputedStyle(article);
  const content = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const notebook = document.querySelector(".jupyter-wrapper .jp-Notebook").getBoundingClientRect();
  const buttons = [...document.querySelectorAll(".md-content__button")].map(b => b.getBoundingClientRect());
  const code = [...document.querySelectorAll(".jp-CodeCell .jp-InputArea-editor")]
    .map(e => e.getBoundingClientRect().width);
  return {content, notebook: notebook.width, top: notebook.top, buttonsBottom: Math.max(...buttons.map(b => b.bottom)),
          narrowestCode: Math.min(...code)};
}"""


@_on("1280", "390")
def test_notebook_uses_the_whole_content_width(visited) -> None:
    widths = visited.tab.evaluate(WIDTHS)
    share = widths["notebook"] / widths["content"]
    width = visited.width
    assert share >= 0.95, f"{visited.url} at {width} px: the notebook uses {share:.0%} of the column"
    # The buttons sit in a row above the notebook, not beside it.
    assert widths["top"] >= widths["buttonsBottom"] - 1, widths
    if visited.width == "390":
        # No prompt column on a phone: code cells are as wide as the notebook.
        code_share = widths["narrowestCode"] / widths["content"]
        assert code_share >= 0.95, f"{visited.url} on a phone: a code cell uses {code_share:.0%} of the column"


# An element sticks out when it reaches past the column and no scrolling box inside its cell, within the
# column, holds it: a box that merely clips (overflow: hidden) cuts the line off, and the notebook scrolling
# sideways as a whole would move every cell; both count as sticking out.
OVERFLOW = """() => {
  const right = document.querySelector("article.md-content__inner").getBoundingClientRect().right + 1;
  // Where the content ends: wrapped inline code repeats its padding at the line's end (Material's
  // box-decoration-break), which may overhang the column by a few pixels without hiding any text.
  const end = e => e.getBoundingClientRect().right - parseFloat(getComputedStyle(e).paddingRight);
  const scrolledWithin = e => {
    for (let p = e.parentElement; p && !p.classList.contains("jp-Notebook"); p = p.parentElement)
      if (["auto", "scroll"].includes(getComputedStyle(p).overflowX) && p.getBoundingClientRect().right <= right)
        return true;
    return false;
  };
  // HTML boxes only: an icon's SVG paths and KaTeX's MathML (for screen readers) are clipped on purpose.
  // A formula counts as one box: inside it, KaTeX's struts (vlist-*) may reach a pixel or two past the
  // formula's own box without any ink there.
  const inFormula = e => e.parentElement && e.parentElement.closest(".katex");
  const sticking = [...document.querySelectorAll(".jupyter-wrapper .jp-Cell *")]
    .filter(e => e instanceof HTMLElement && e.getBoundingClientRect().width > 0 && !inFormula(e))
    .filter(e => end(e) > right && !scrolledWithin(e))
    .map(e => e.className || e.tagName);
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth, sticking: [...new Set(sticking)].slice(0, 5)};
}"""


@_on("390")
def test_phone_page_never_scrolls_sideways(visited) -> None:
    """Long code and output lines scroll inside their cell; the page itself stays put."""
    found = visited.tab.evaluate(OVERFLOW)
    assert found["scrollWidth"] <= found["innerWidth"], f"{visited.url} scrolls sideways: {found}"
    assert found["sticking"] == [], f"{visited.url}: these stick out of the column unscrolled: {found}"


# ---------------------------------------------------------------------------------------------------
# Weight: JupyterLab's CSS is one cached file, not inlined into every page
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("lang", "name"), PAGES, ids=IDS)
def test_notebook_css_is_one_shared_file(site: Path, lang: str, name: str) -> None:
    url = _url(lang, name)
    html = (site / url / "index.html").read_text(encoding="utf-8")
    inline = [len(css) for css in re.findall(r"<style[^>]*>(.*?)</style>", html, re.DOTALL)]
    assert max(inline, default=0) <= INLINE_CSS_LIMIT, f"{url}: inline <style> blocks of {inline} characters"
    stylesheets = {
        urlsplit(urljoin("https://site/" + url, href)).path.lstrip("/")
        for href in re.findall(r'<link rel="stylesheet" href="([^"]+)"', html)
    }
    for shared in ("assets/stylesheets/jupyter.css", "assets/stylesheets/notebook.css"):
        assert shared in stylesheets, f"{url} does not link {shared}"
        assert (site / shared).is_file(), f"{shared} is linked but not in the site"
    assert ".jupyter-wrapper" in (site / "assets/stylesheets/jupyter.css").read_text(encoding="utf-8")


def test_only_notebook_pages_load_the_notebook_css(site: Path) -> None:
    html = (site / "multi-head" / "index.html").read_text(encoding="utf-8")
    assert "jupyter.css" not in html
    assert "notebook.css" not in html


# ---------------------------------------------------------------------------------------------------
# The buttons, the copy labels and the downloaded file, in the page's language
# ---------------------------------------------------------------------------------------------------
@_on("390")
def test_colab_and_download_buttons_are_named_in_the_page_language(visited) -> None:
    page, lang = visited.tab, visited.lang
    for key, css in (("colab", ".notebook-colab"), ("download", ".notebook-download")):
        button = page.locator(css)
        # The accessible name is the visible label, so it shows on a phone too, where a tooltip never does.
        assert page.get_by_role("link", name=WORDS[lang][key], exact=True).and_(button).count() == 1, f"{key} button"
        assert button.inner_text().strip() == WORDS[lang][key]
        assert button.locator("span").is_visible()
        tooltip = button.get_attribute("title") or ""
        assert tooltip, f"{key} button has no tooltip"
        assert _in_language(tooltip, lang), f"{key} button's tooltip {tooltip!r} is not in {lang}"


@_on("1280")
def test_download_is_named_per_language_and_is_that_languages_notebook(visited, base_url: str, site: Path) -> None:
    page, lang, name = visited.tab, visited.lang, _name(visited)
    with page.expect_download() as download:
        page.locator(".notebook-download").click()
    expected = f"{name}.ipynb" if lang == "en" else f"{name}.{lang}.ipynb"
    assert download.value.suggested_filename == expected
    # The file the button points to is in the site, and it is this language's notebook.
    href = page.locator(".notebook-download").get_attribute("href")
    served = site / urlsplit(urljoin(base_url + _url(lang, name), href)).path.removeprefix(urlsplit(base_url).path)
    assert served.is_file(), f"{served} is missing"
    assert json.loads(served.read_bytes()) == json.loads((DOCS / lang / "notebooks" / f"{name}.ipynb").read_bytes())
    download.value.cancel()


@_on("1280")
def test_copy_buttons_speak_the_page_language(visited) -> None:
    page, lang = visited.tab, visited.lang
    buttons = page.locator(".jupyter-wrapper clipboard-copy")
    assert buttons.count() > 0
    labels = {(button.get_attribute("aria-label"), button.get_attribute("title")) for button in buttons.all()}
    assert labels == {(WORDS[lang]["copy"], WORDS[lang]["copy"])}
    first = buttons.first
    first.scroll_into_view_if_needed()
    first.click()
    from playwright.sync_api import expect

    # The notice appears once the clipboard has taken the text (asynchronously), then fades.
    notice = first.locator(".notice")
    expect(notice).to_be_visible()
    expect(notice).to_have_text(WORDS[lang]["copied"])


# ---------------------------------------------------------------------------------------------------
# The sitemap
# ---------------------------------------------------------------------------------------------------
def test_sitemap_lists_every_notebook_page_of_both_languages(site: Path) -> None:
    site_url = site_config.config()["site_url"]
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9", "x": "http://www.w3.org/1999/xhtml"}
    urls = ElementTree.parse(site / "sitemap.xml").getroot().findall("s:url", ns)
    listed = {url.findtext("s:loc", namespaces=ns): url for url in urls}
    for lang, name in PAGES:
        loc = site_url + _url(lang, name)
        assert loc in listed, f"sitemap.xml does not list {loc}"
        alternates = {link.get("hreflang"): link.get("href") for link in listed[loc].findall("x:link", ns)}
        assert alternates == {other: site_url + _url(other, name) for other in LANGUAGES}, loc
