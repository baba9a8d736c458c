"""The language switcher keeps the reader's place: the same page, the same section, one request, no error."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

SCREENS = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}

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


def _open(page, url: str) -> None:
    page.goto(url, wait_until="load")
    page.evaluate("document.fonts.ready.then(() => null)")  # the text's final height, before scrolling


def _switch(page, base_url: str, start: str, section: str | None, *, scroll: bool = True) -> list:
    """Open ``start`` (unless ``scroll`` is False: the test has opened it and arrived at its section), scroll
    to ``section`` as a reader does, and switch the language with the menu."""
    if scroll:
        _open(page, base_url + start)
    if section and scroll:
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
    other = page.locator("a.md-select__link:not([hreflang='{}'])".format("zh" if start.startswith("zh/") else "en"))
    with page.expect_navigation():
        _click_in_the_menu(page, other)
    page.wait_for_load_state("load")
    return documents


#: The menu has opened: its transitions are over, and the pointer over the link's middle would hit the link.
MENU_OPEN = """link => Promise.all(link.closest('.md-select').getAnimations({subtree: true}).map(a => a.finished))
  .then(() => {
    const box = link.getBoundingClientRect();
    return document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2)?.closest('a') === link;
  })"""


def _click_in_the_menu(page, link) -> None:
    """Open the language menu and click ``link`` in it, as a reader does: the pointer moves onto the button,
    then, once the menu has opened, onto the link, and clicks; the page does not move. (Playwright's own click
    scrolls whatever it finds covered into view, and a menu that is still fading in is covered: on a busy
    machine it scrolled the page up to make the sticky header's link "visible", a section before the one
    being read.)"""
    page.locator(".md-select > button").hover()  # the language menu opens on hover (and on focus)
    link.wait_for(state="visible")
    page.wait_for_function(MENU_OPEN, arg=link.element_handle())
    box = link.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _lands_on(page, base_url: str, target: str, section: str | None) -> None:
    """The switch opened ``target`` at ``section``: its heading at the top, under the header."""
    url = urlsplit(page.url)
    assert url.path == urlsplit(base_url).path + target, page.url
    assert url.fragment == (section or ""), page.url
    if section:
        page.evaluate(SETTLED)
        top = page.locator(f"#{section}").evaluate("heading => heading.getBoundingClientRect().top")
        header = page.locator(".md-header").evaluate("header => header.getBoundingClientRect().bottom")
        # Near the end of a page, the heading cannot go up that far: the page is scrolled to its end instead.
        at_end = page.evaluate("Math.ceil(scrollY + innerHeight) >= document.documentElement.scrollHeight")
        at_top = header - 1 <= top < header + 80
        assert at_top or (at_end and header <= top < page.viewport_size["height"]), (
            f"#{section} is {top}px from the top (the header ends at {header}; the page's end reached: {at_end})"
        )


@pytest.mark.parametrize(("start", "section", "target"), CASES, ids=[c[0] or "home" for c in CASES])
def test_switching_language_keeps_the_page_and_the_section(page, base_url: str, start, section, target) -> None:
    documents = _switch(page, base_url, start, section)
    url = urlsplit(page.url)
    # One request for the new page: no redirect on the way.
    assert [(response.status, urlsplit(response.url).path) for response in documents] == [(200, url.path)]
    _lands_on(page, base_url, target, section)


#: (a link to a section, the same section in the other language): chapters and notebooks, both directions, and
#: a section near the end of its page, which a link cannot scroll up to the header.
LINKS = [
    ("multi-head/#split-heads", "zh/multi-head/"),
    ("zh/multi-head/#split-heads", "multi-head/"),
    ("zh/masks/#padding-masks", "masks/"),
    ("buffers/#to-device", "zh/buffers/"),
    ("notebooks/masks/#causal-mask", "zh/notebooks/masks/"),
    ("zh/notebooks/multi-head/#split-heads", "notebooks/multi-head/"),
    ("masks/#exercise-combined-mask-bug", "zh/masks/"),
]


@pytest.mark.parametrize("width", ["1280", "390"])
@pytest.mark.parametrize(("link", "target"), LINKS, ids=[link for link, _ in LINKS])
def test_a_reader_who_came_by_a_link_keeps_its_section(page, base_url: str, link, target, width) -> None:
    """A shared link, a search result or a bookmark: the page opens at the section, the reader switches at once."""
    page.set_viewport_size(SCREENS[width])
    _open(page, base_url + link)
    page.evaluate(SETTLED)
    start, section = link.split("#")
    _switch(page, base_url, start, section, scroll=False)
    _lands_on(page, base_url, target, section)


TOC_CLICKS = [("masks/", "float16", "zh/masks/"), ("zh/notebooks/buffers/", "to-device", "notebooks/buffers/")]


@pytest.mark.parametrize(("start", "section", "target"), TOC_CLICKS)
def test_a_reader_who_clicked_the_table_of_contents_keeps_its_section(page, base_url, start, section, target) -> None:
    _open(page, base_url + start)
    page.locator(f'.md-sidebar--secondary a[href="#{section}"]').click()  # the table of contents on the right
    page.wait_for_url(f"**#{section}")
    page.evaluate(SETTLED)
    _switch(page, base_url, start, section, scroll=False)
    _lands_on(page, base_url, target, section)


@pytest.mark.parametrize(("start", "query"), [("", "transpose"), ("zh/", "contiguous")])
def test_a_reader_who_clicked_a_search_result_keeps_its_section(page, base_url: str, start, query) -> None:
    """The section a search result opened, wherever it is: the reader switches as soon as it has opened."""
    _open(page, base_url + start)
    page.locator(".site-search__open").click()
    page.keyboard.type(query)
    result = page.locator(".site-search__sections a").first
    result.wait_for()
    result.click()
    page.wait_for_url(lambda url: urlsplit(url).fragment != "")
    page.wait_for_load_state("load")
    page.evaluate("document.fonts.ready.then(() => null)")
    page.evaluate(SETTLED)
    url = urlsplit(page.url)
    arrived, section = url.path.removeprefix(urlsplit(base_url).path), url.fragment
    target = arrived.removeprefix("zh/") if arrived.startswith("zh/") else "zh/" + arrived
    _switch(page, base_url, arrived, section, scroll=False)
    _lands_on(page, base_url, target, section)


def test_a_reader_who_resized_the_window_keeps_its_section(page, base_url: str) -> None:
    """A phone turned, a window narrowed: the text reflows under the reader, who is still reading the same section."""
    _open(page, base_url + "multi-head/#split-heads")
    page.evaluate(SETTLED)
    page.set_viewport_size(SCREENS["390"])
    page.evaluate(SETTLED)
    _switch(page, base_url, "multi-head/", "split-heads", scroll=False)
    _lands_on(page, base_url, "zh/multi-head/", "split-heads")


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
