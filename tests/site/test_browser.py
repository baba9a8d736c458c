"""The built site in a real browser (headless Chromium): what a reader's browser fetches, runs and copies.

Its fixtures (the local server, Chromium, the pages as ``visited``) are in conftest.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sybil import Document

from docs_tools import config as site_config
from docs_tools import records
from docs_tools.pages import INCLUDE, RUN, fenced_blocks, library_code

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SOURCES = records.pages()  # the English pages, as paths relative to docs/en
LANGUAGES = tuple(site_config.complete_locales())  # mkdocs.yml: English and every complete translation


def _url(lang: str, source: str) -> str:
    return site_config.url(lang, source)


URLS = [_url(lang, source) for lang in LANGUAGES for source in SOURCES]
NOTEBOOK_URLS = [
    f"{prefix}notebooks/{path.stem}/"
    for prefix in ("", "zh/")
    for path in sorted((DOCS / "en" / "notebooks").glob("*.ipynb"))
]


@pytest.mark.parametrize("visited", [(url, "1280") for url in URLS + NOTEBOOK_URLS], indirect=True)
def test_page_loads_everything_from_the_site_itself_without_errors(visited, base_url: str) -> None:
    visited.settle()  # everything the page loads, in
    page, url, requests, errors = visited.tab, visited.url, visited.requests, visited.errors
    own_host = urlsplit(base_url).netloc
    elsewhere = sorted({request for request in requests if urlsplit(request).netloc not in {own_host, ""}})
    assert elsewhere == [], f"{url} asked another host for: {elsewhere}"
    assert errors == [], f"{url}: {errors}"
    # Every formula was typeset by KaTeX (at build time, hooks/math.py), and none failed to parse; no TeX is
    # left in a notebook's text. KaTeX's stylesheet and fonts come from the site, on pages with math only,
    # and no page loads a script to typeset math.
    formulas = page.locator(".arithmatex")
    assert page.locator(".arithmatex .katex").count() == formulas.count()
    assert page.locator(".katex-error").count() == 0
    katex = [urlsplit(request).path for request in requests if "katex" in request.lower()]
    if formulas.count():
        assert any(path.endswith("/assets/vendor/katex/katex.min.css") for path in katex), url
        assert any(path.endswith(".woff2") for path in katex), f"{url}: KaTeX's fonts"
    else:
        assert katex == [], f"{url} has no math but loads {katex}"
    scripts = page.evaluate("[...document.scripts].map(script => script.src)")
    assert [src for src in scripts if re.search(r"katex|auto-render|math\.js|mathjax", src, re.IGNORECASE)] == []
    leftover = page.evaluate(
        "[...document.querySelectorAll('.jp-RenderedMarkdown')]"
        ".map(cell => { const copy = cell.cloneNode(true); copy.querySelectorAll('.katex, code, pre')"
        ".forEach(node => node.remove()); return copy.textContent })"
        ".filter(text => /\\$[^$\\s][^$]*\\$/.test(text))"
    )
    assert leftover == [], f"{url}: formulas left as text"
    # Images (the figures) loaded.
    broken = page.evaluate("[...document.images].filter(image => !image.naturalWidth).map(image => image.src)")
    assert broken == []


def _python_blocks(source: Path) -> list[str]:
    document = Document(source.read_text(encoding="utf-8"), str(source))
    return [str(block.lexemes["source"]) for block in fenced_blocks(document) if block.lexemes["info"] == RUN]


COPY_EACH = """async selector => {
  const copied = [];
  for (const button of document.querySelectorAll(selector)) {
    // A block in a folded solution is copied unfolded, as a reader sees it, and folded again after.
    const folded = button.closest("details:not([open])");
    if (folded) folded.open = true;
    await navigator.clipboard.writeText("");
    button.click();
    copied.push(await navigator.clipboard.readText());
    if (folded) folded.open = false;
  }
  return copied;
}"""


#: A Python block of the site, with what it holds: the copy button's, Material's title's, and the code.
BLOCKS = """selector => [...document.querySelectorAll(selector)].map(block => ({
  copy: block.querySelectorAll("button.md-code__button[data-md-type=copy]").length,
  title: block.querySelector(":scope > .filename")?.textContent ?? null,
  href: block.querySelector(":scope > .filename a")?.getAttribute("href") ?? null,
  note: block.querySelector(":scope > .filename .library-source__note")?.textContent ?? null,
  code: block.querySelector("code").textContent,
}))"""


def _is_library_source(block: str) -> bool:
    """A block that shows a section of the library (hooks/library_code.py): one ``--8<--`` line."""
    return block.lstrip().startswith("--8<--")


# The API reference's signatures are not snippets.
@pytest.mark.parametrize(
    ("visited", "lang", "source"),
    [((_url(lang, source), "1280"), lang, source) for lang in LANGUAGES for source in SOURCES if source != "api.md"],
    indirect=["visited"],
)
def test_copy_button_gives_exactly_the_code_the_suite_runs(visited, lang: str, source: str) -> None:
    page, url = visited.tab, visited.url
    # Library source has no copy button (test_library_source_is_marked_and_has_no_copy_button): every other
    # block of the page has one, which copies what Sybil runs.
    blocks = [block for block in _python_blocks(DOCS / lang / source) if not _is_library_source(block)]
    selector = "div.language-python:not(.library-source) button.md-code__button[data-md-type=copy]"
    buttons = page.locator(selector)
    # Every block's button, clicked from the page's own script (one round trip for the page, not three a
    # block), with the clipboard emptied before each click so that a button that copies nothing is caught.
    copied = page.evaluate(COPY_EACH, selector)
    # And the first and the last button as a reader clicks them, the mouse on the button scrolled into view:
    # they are visible and nothing covers them.
    for index in sorted({0, len(copied) - 1}) if copied else []:
        page.evaluate("navigator.clipboard.writeText('')")
        # A block in a folded solution (an exercise's): the reader unfolds it first, and it is folded again after.
        folded = buttons.nth(index).evaluate("b => { const d = b.closest('details'); return !!d && !d.open; }")
        summary = buttons.nth(index).locator("xpath=ancestor::details[1]/summary")
        if folded:
            summary.click()
        try:
            buttons.nth(index).click()
            assert page.evaluate("navigator.clipboard.readText()") == copied[index], f"{url}, button {index + 1}"
        finally:
            if folded:
                summary.click()
    assert len(copied) == len(blocks), f"{url}: {len(copied)} copy buttons for {len(blocks)} Python blocks"
    for number, (text, block) in enumerate(zip(copied, blocks, strict=True), start=1):
        # The very text Sybil runs and checks, with no prompts and no output lines.
        assert text.rstrip("\n") == block.rstrip("\n"), f"{url}, block {number}"


@pytest.mark.parametrize(
    ("visited", "lang", "source"),
    [((_url(lang, source), "1280"), lang, source) for lang in LANGUAGES for source in SOURCES if source != "api.md"],
    indirect=["visited"],
)
def test_library_source_is_marked_and_has_no_copy_button(visited, lang: str, source: str) -> None:
    """Library source on a page is there to read: pasted into the page's session, it would replace the class the
    page imported with one that lacks the library's own imports, and every later block would fail. So it has no
    copy button, and its title names the file, linked to the lines shown, with a note in the page's language to
    import it; every other Python block keeps its copy button and has no such title."""
    url = visited.url
    blocks = _python_blocks(DOCS / lang / source)
    shown = visited.tab.evaluate(BLOCKS, "div.language-python")
    assert len(shown) == len(blocks), f"{url}: {len(shown)} Python blocks on the page, {len(blocks)} in its source"
    note = site_config.extra(lang)["library_source"]["note"]
    # In the reader's language: a translation has its own note, not the English one.
    assert lang == site_config.SOURCE or note != site_config.extra(site_config.SOURCE)["library_source"]["note"]
    repository = site_config.addresses()[1]
    for number, (block, on_screen) in enumerate(zip(blocks, shown, strict=True), start=1):
        where = f"{url}, Python block {number}"
        if not _is_library_source(block):
            assert on_screen["copy"] == 1, f"{where}: {on_screen['copy']} copy buttons"
            assert on_screen["title"] is None, f"{where}: has a title, as library source does"
            continue
        path = INCLUDE.match(block.strip())["path"]
        code = library_code(block.strip(), ROOT)
        assert on_screen["copy"] == 0, f"{where}: library source with a copy button"
        assert on_screen["code"].rstrip("\n") == code, where
        assert on_screen["title"] == f"{path} {note}", where
        # The link opens the file in the repository at the lines shown: its first and last line of code.
        link = re.fullmatch(rf"{re.escape(repository)}/blob/main/{re.escape(path)}#L(\d+)-L(\d+)", on_screen["href"])
        assert link is not None, f"{where}: {on_screen['href']}"
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        first, last = int(link[1]), int(link[2])
        shown_lines = [line.strip() for line in code.splitlines() if line.strip()]
        assert (lines[first - 1].strip(), lines[last - 1].strip()) == (shown_lines[0], shown_lines[-1]), where


def test_every_library_source_block_is_visited() -> None:
    """The test above sees library source: the pages include some, in every language."""
    for lang in LANGUAGES:
        included = [
            block for source in SOURCES for block in _python_blocks(DOCS / lang / source) if _is_library_source(block)
        ]
        assert len(included) >= 10, f"{lang}: {len(included)} blocks of library source"


@pytest.mark.parametrize("visited", [(lang_prefix + "masks/", "1280") for lang_prefix in ("", "zh/")], indirect=True)
def test_each_palette_shows_its_own_figure(visited, dark_palette) -> None:
    """A figure is on the page twice, ``name.svg#only-light`` and ``name-dark.svg#only-dark``: the reader sees
    the one drawn for the palette, switched with the header's toggle, never a white slab on the dark page."""
    page = visited.tab

    def shown() -> list[str]:
        return page.eval_on_selector_all(
            "img.attention-figure", "images => images.filter(i => i.offsetParent !== null).map(i => i.src)"
        )

    light = [urlsplit(src).path.rsplit("/", 1)[-1] for src in shown()]
    assert "causal-attn-weights.svg" in light
    assert not [name for name in light if name.endswith("-dark.svg")], light
    with dark_palette(page):
        dark = [urlsplit(src).path.rsplit("/", 1)[-1] for src in shown()]
        assert dark == [name.removesuffix(".svg") + "-dark.svg" for name in light]


#: A find-the-bug exercise's section, and the words of its hint, by language (docs/<lang>/masks.md).
BUG_HINT = {"": ("Hint", "either mask hides it"), "zh/": ("提示", "任意一个掩码遮住了某个键")}


@pytest.mark.parametrize(
    "visited",
    [
        (lang + page, width)
        for lang in ("", "zh/")
        for page in ("masks/", "notebooks/masks/")
        for width in ("1280", "390")
    ],
    indirect=True,
)
def test_a_bugs_hint_is_folded_until_the_reader_opens_it(visited) -> None:
    """Under a find-the-bug exercise a reader sees the code and the checker's ✗ (the reference, the smallest
    failing input); the hint, which gives the fix away, stays folded until they open it, on the page and on
    the notebook's page, in both languages, on a phone too."""
    page, url = visited.tab, visited.url
    prefix = "zh/" if url.startswith("zh/") else ""
    title, words = BUG_HINT[prefix]
    failure = page.locator("pre:has-text('✗ exercise-combined-mask-bug')").first
    failure.scroll_into_view_if_needed()
    assert failure.is_visible()
    assert title not in failure.inner_text()
    folds = page.locator(f"details:has(summary:text-is('{title}')):has-text('{words}')")
    assert folds.count() == 1
    fold = folds.first
    assert fold.get_attribute("open") is None
    hint = fold.locator("pre").first
    assert not hint.is_visible()
    fold.locator("summary").first.click()
    hint.wait_for(state="visible")
    # The hint as printed, wrapped: compared without its line breaks and indents.
    assert re.sub(r"\s", "", words) in re.sub(r"\s", "", hint.inner_text())
