"""The language switcher keeps the reader's place: the same page, the same section, one request, no error."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

#: (page, the section the reader scrolled to, the same page in the other language).
CASES = [
    ("multi-head/", "split-heads", "zh/multi-head/"),
    ("zh/multi-head/", "split-heads", "multi-head/"),
    ("masks/", "causal-mask", "zh/masks/"),
    ("zh/notebooks/masks/", "causal-mask", "notebooks/masks/"),
    ("notebooks/multi-head/", "split-heads", "zh/notebooks/multi-head/"),
    ("zh/glossary/", None, "glossary/"),
    ("", None, "zh/"),
    ("zh/", None, ""),
]


#: Waits until the page has stopped scrolling: the same scroll position for five frames in a row.
SETTLED = """async () => {
  for (let last = -1, same = 0; same < 5; ) {
    await new Promise(requestAnimationFrame);
    same = scrollY === last ? same + 1 : 0;
    last = scrollY;
  }
}"""


def _switch(page, base_url: str, start: str, section: str | None) -> list:
    page.goto(base_url + start, wait_until="load")
    page.evaluate("document.fonts.ready.then(() => null)")  # the text's final height, before scrolling
    if section:
        # Scrolled there, as a reader does: the address bar does not show the section.
        heading = page.locator(f"#{section}")
        heading.evaluate("heading => heading.scrollIntoView()")
        # and read on a little, with the pointer over the text: over the navigation, the wheel would scroll
        # the navigation instead of the page
        box = heading.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, 400)
        page.mouse.wheel(0, 200)
        # Scrolling may be smooth, and a loaded machine may start it late: wait until the heading has gone
        # up under the header (where the switcher counts it as the section being read), then until it stops.
        page.wait_for_function(
            "id => document.getElementById(id).getBoundingClientRect().top"
            " <= document.querySelector('.md-header').getBoundingClientRect().bottom",
            arg=section,
        )
        page.evaluate(SETTLED)
    documents = []
    page.on("response", lambda response: response.request.resource_type == "document" and documents.append(response))
    page.locator(".md-select > button").hover()  # the language menu opens on hover (and on focus)
    other = page.locator("a.md-select__link:not([hreflang='{}'])".format("zh" if start.startswith("zh/") else "en"))
    with page.expect_navigation():
        other.click()
    page.wait_for_load_state("load")
    return documents


@pytest.mark.parametrize(("start", "section", "target"), CASES, ids=[c[0] or "home" for c in CASES])
def test_switching_language_keeps_the_page_and_the_section(page, base_url: str, start, section, target) -> None:
    documents = _switch(page, base_url, start, section)
    url = urlsplit(page.url)
    assert url.path == urlsplit(base_url).path + target, page.url
    assert url.fragment == (section or ""), page.url
    # One request for the new page: no redirect on the way.
    assert [(response.status, urlsplit(response.url).path) for response in documents] == [(200, url.path)]
    if section:
        top = page.locator(f"#{section}").evaluate("heading => heading.getBoundingClientRect().top")
        assert 0 <= top < 120, f"#{section} is {top}px from the top"


@pytest.mark.parametrize(
    "visited",
    [(url, "1280") for url in ("", "multi-head/", "zh/masks/", "notebooks/masks/", "zh/notebooks/buffers/")],
    indirect=True,
)
def test_no_console_error_and_no_sitemap_lookup(visited) -> None:
    visited.settle()  # Material's lookup ran once the document had loaded
    assert [error for error in visited.errors if error.startswith("console: ")] == [], visited.errors
    assert not [request for request in visited.requests if request.endswith("sitemap.xml")], visited.requests
    # The hreflang links are still in the page for search engines.
    assert visited.tab.locator("link[hreflang]").count() == 2
