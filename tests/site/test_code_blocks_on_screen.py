"""Code fits its block on the built site: at 1280 px no chapter's code block scrolls sideways, and on a
390 px phone long lines scroll inside their block while the page itself never does. What makes them fit is
the rule on the sources, tests/pages/test_code_width.py (``MAX_COLUMNS`` columns a line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sybil import Document

from docs_tools import config as site_config
from docs_tools.pages import OUTPUT, RUN, fenced_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LANGUAGES = tuple(site_config.complete_locales())  # mkdocs.yml: English and every complete translation

#: The nav sections that hold the chapters: the pages that teach with code.
CHAPTER_SECTIONS = ("Foundations", "Self-attention", "Multi-head attention")


def chapters() -> list[str]:
    sections = {title: entries for item in site_config.config()["nav"] for title, entries in item.items()}
    missing = [title for title in CHAPTER_SECTIONS if not isinstance(sections.get(title), list)]
    assert not missing, f"mkdocs.yml's nav has no section {missing}: update CHAPTER_SECTIONS"
    return [page for title in CHAPTER_SECTIONS for entry in sections[title] for page in entry.values()]


def _url(lang: str, source: str) -> str:
    return site_config.url(lang, source)


def _fences(source: Path) -> int:
    document = Document(source.read_text(encoding="utf-8"), str(source))
    return sum(block.lexemes["info"] in (RUN, OUTPUT) for block in fenced_blocks(document))


#: Every python and output block of the page's content: whether it scrolls sideways, and its widest line.
MEASURE = """() => [...document.querySelectorAll(
    '.md-content div.language-python pre > code, .md-content div.language-output pre > code')]
  .map((code, index) => ({
    index,
    kind: code.closest('div.language-output') ? 'output' : 'python',
    scrolls: code.scrollWidth > code.clientWidth,
    widest: code.textContent.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), ''),
  }))"""


def measure(page) -> list[dict]:
    return page.evaluate(MEASURE)


@pytest.mark.parametrize(
    ("visited", "source"),
    [((_url(lang, source), "1280"), DOCS / lang / source) for lang in LANGUAGES for source in chapters()],
    indirect=["visited"],
)
def test_no_code_block_scrolls_sideways_at_1280px(visited, source: Path) -> None:
    """The sources' lines fit ``MAX_COLUMNS`` (tests/pages/test_code_width.py), so at 1280 px none of a chapter's blocks
    scrolls: one that does means the columns no longer fit the block (a wider font, a wider sidebar)."""
    shown = measure(visited.tab)
    # Every python and output block of the Markdown is measured, no more and no fewer.
    assert len(shown) == _fences(source), f"{visited.url}: {len(shown)} code blocks on the page"
    assert shown, f"{visited.url}: a chapter with no code"
    scrolling = [f"{b['kind']} block {b['index'] + 1}: {b['widest']!r}" for b in shown if b["scrolls"]]
    assert scrolling == [], f"{visited.url}: code blocks scroll sideways at 1280 px:\n" + "\n".join(scrolling)


#: How wide the page is, and each code block that scrolls: can it, and does it stay inside the screen?
PHONE = """() => ({
  page: document.documentElement.scrollWidth,
  screen: window.innerWidth,
  wide: [...document.querySelectorAll('.md-content pre > code')]
    .filter(code => code.scrollWidth > code.clientWidth)
    .map(code => {
      const before = window.scrollX;
      code.scrollLeft = code.scrollWidth;
      const scrolled = code.scrollLeft > 0 && window.scrollX === before;
      code.scrollLeft = 0;
      return {
        scrolled,
        overflow: getComputedStyle(code).overflowX,
        right: code.getBoundingClientRect().right,
        text: code.textContent.slice(0, 60),
      };
    }),
})"""


def phone_problems(page) -> list[str]:
    result = page.evaluate(PHONE)
    problems = []
    if result["page"] > result["screen"]:
        problems.append(f"the page is {result['page']} px wide on a {result['screen']} px screen")
    for block in result["wide"]:
        if not block["scrolled"] or block["overflow"] not in ("auto", "scroll"):
            problems.append(f"a long line does not scroll inside its block: {block['text']!r}")
        if block["right"] > result["screen"] + 0.5:
            problems.append(f"a code block ends at {block['right']:.0f} px, off the screen: {block['text']!r}")
    return problems


@pytest.mark.parametrize(
    "visited", [(_url(lang, source), "390") for lang in LANGUAGES for source in chapters()], indirect=True
)
def test_on_a_phone_long_lines_scroll_inside_their_block_never_the_page(visited) -> None:
    assert phone_problems(visited.tab) == []


def test_the_browser_checks_see_a_block_that_scrolls_and_a_page_that_does(page, base_url: str) -> None:
    """The measurements above can fail: a planted long line scrolls at 1280 px, a planted wide element
    makes the page itself scroll on a phone."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(base_url + "multi-head/", wait_until="load")
    assert not any(block["scrolls"] for block in measure(page))
    page.evaluate("document.querySelector('.md-content div.language-python code').append('#'.repeat(90))")
    assert [block["index"] for block in measure(page) if block["scrolls"]] == [0]

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base_url + "zh/multi-head/", wait_until="load")
    assert phone_problems(page) == []
    page.evaluate(
        "document.querySelector('.md-content pre').style.overflow = 'visible';"
        "document.querySelector('.md-content pre > code').style.overflow = 'visible';"
        "document.querySelector('.md-content pre > code').append('#'.repeat(200))"
    )
    problems = phone_problems(page)
    assert any("the page is" in problem for problem in problems), problems
    assert any("does not scroll inside its block" in problem for problem in problems), problems
