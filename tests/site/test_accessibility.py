"""Accessibility in a real browser: axe-core finds no serious or critical violation, identifiers stay whole
on a phone, regions that scroll take keyboard focus, and the 404 page serves readers of both languages.

axe-core comes from npm (pinned in package-lock.json, installed by ``python3 dev.py`` with ``npm ci``) and
is injected from node_modules into the page (``axe_violations``, tests/site/conftest.py), so nothing is
fetched from another host. Without it these tests skip, unless ``REQUIRE_BROWSER=1``, which turns a missing
axe-core into a failure, as it does a missing browser (conftest.py).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: One page of each kind: the home page, a chapter, a notebook, the glossary.
PAGES = {"home": "", "chapter": "multi-head/", "notebook": "notebooks/multi-head/", "glossary": "glossary/"}
LANGUAGES = {"en": "", "zh": "zh/"}
#: Material picks its palette from the reader's prefers-color-scheme (mkdocs.yml).
SCHEMES = {"light": "default", "dark": "slate"}
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
#: Where GitHub Pages serves the site (site_url in mkdocs.yml): the 404 page's links start with it.
BASE_PATH = urlsplit("https://attention-docs.github.io/attention-docs/").path


#: Resolves once the page has loaded its fonts and then gone 250 ms without a change to its DOM: Material
#: wraps tables and adds buttons after the load event, and scrollable.js marks what scrolls 100 ms after that.
SETTLED = """async () => {
  await document.fonts.ready;
  await new Promise(resolve => {
    let timer = setTimeout(done, 250);
    const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, 250); });
    function done() { observer.disconnect(); resolve(); }
    observer.observe(document.documentElement, { subtree: true, childList: true, attributes: true });
  });
}"""


def load(page, url: str) -> None:
    """Open ``url`` and wait until the page is as a reader sees it: loaded, and settled (``SETTLED``)."""
    page.goto(url, wait_until="load")
    page.evaluate(SETTLED)


def _scheme(page) -> str:
    return page.evaluate("document.body.getAttribute('data-md-color-scheme')")


@pytest.mark.parametrize(
    "visited",
    [(LANGUAGES[lang] + PAGES[kind], width) for kind in PAGES for lang in LANGUAGES for width in ("1280", "390")],
    indirect=True,
)
def test_axe_finds_no_serious_violation(visited, axe_violations) -> None:
    """Each kind of page in each language, on a desktop and on a phone, in the light palette (the browser's
    own setting, which a new tab has)."""
    page = visited.tab
    page.evaluate(SETTLED)
    assert _scheme(page) == SCHEMES["light"]
    violations = axe_violations(page)
    assert violations == [], f"{len(violations)} serious or critical violations:\n" + "\n".join(violations)


def test_axe_reports_every_element_of_a_violation(page, base_url: str, axe_violations) -> None:
    """The check can fail, and names each offending element: two planted images without a text alternative
    (axe's image-alt rule, critical)."""
    load(page, base_url + "glossary/")
    page.evaluate(
        "for (const n of [1, 2]) document.querySelector('article').append(Object.assign("
        "document.createElement('img'), {id: `planted-${n}`, src: 'assets/images/favicon.png'}))"
    )
    violations = axe_violations(page)
    assert [line.split("\n")[0] for line in violations] == [
        "image-alt (critical): #planted-1",
        "image-alt (critical): #planted-2",
    ], violations


@pytest.mark.parametrize(
    "visited", [(LANGUAGES[lang] + PAGES[kind], "1280") for kind in PAGES for lang in LANGUAGES], indirect=True
)
def test_axe_finds_no_serious_violation_in_the_dark_palette(visited, axe_violations, dark_palette) -> None:
    """The dark palette, switched to with the header's toggle as a reader does, and back again after, for the
    page's other tests. (That a reader whose system prefers it gets it on arrival, the search dialog's and
    the 404 page's tests below check: Material reads that setting only when a page loads.)"""
    page = visited.tab
    with dark_palette(page):
        page.evaluate(SETTLED)
        violations = axe_violations(page)
    assert violations == [], f"{len(violations)} serious or critical violations:\n" + "\n".join(violations)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(("lang", "query"), [("en", "attention"), ("zh", "注意力")])
def test_axe_finds_no_serious_violation_in_the_search_dialog(page, base_url: str, axe_violations, lang, query, scheme):
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme=scheme)
    load(page, base_url + LANGUAGES[lang])
    page.locator(".site-search__open").click()
    page.keyboard.insert_text(query)
    page.locator(".site-search__result").first.wait_for(timeout=15_000)
    assert _scheme(page) == SCHEMES[scheme]
    violations = axe_violations(page)
    assert violations == [], f"{len(violations)} serious or critical violations:\n" + "\n".join(violations)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_glossary_identifiers_stay_whole_on_a_phone(page, base_url: str, lang: str) -> None:
    page.set_viewport_size(PHONE)
    load(page, base_url + LANGUAGES[lang] + "glossary/")
    codes = page.evaluate(
        "[...document.querySelectorAll('.md-typeset table code')].map(code => [code.textContent,"
        " code.getClientRects().length])"
    )
    assert len(codes) > 20, "the glossary's tables name the code's identifiers"
    split = [text for text, lines in codes if lines > 1]
    assert split == [], f"identifiers broken across lines: {split}"
    # The page itself never scrolls sideways: a table wider than the phone scrolls inside its own box,
    # and that box takes keyboard focus.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    boxes = (
        "[...document.querySelectorAll('.md-typeset__scrollwrap')].map(box => [box.scrollWidth > box.clientWidth,"
        " box.tabIndex])"
    )
    # scrollable.js marks the boxes 100 ms after Material has wrapped the tables (after the load event).
    page.wait_for_function(f"{boxes}.every(([wide, tabIndex]) => !wide || tabIndex === 0)", timeout=5_000)
    boxes = page.evaluate(boxes)
    assert any(wide for wide, _ in boxes), "on a phone, the glossary's tables are wider than the screen"
    assert all(tab_index == 0 for wide, tab_index in boxes if wide)


def test_only_regions_that_scroll_are_tab_stops(page, base_url: str) -> None:
    """On a phone the notebook's code cells scroll and take focus; on a wide screen those that fit give
    it back, so a reader tabbing through the page never stops on a region that does not scroll."""
    page.set_viewport_size(PHONE)
    load(page, base_url + PAGES["notebook"])
    check = (
        "[...document.querySelectorAll('[data-scroll-focus]')].map(region => [region.tabIndex,"
        " region.scrollWidth > region.clientWidth || region.scrollHeight > region.clientHeight])"
    )
    on_a_phone = page.evaluate(check)
    assert len(on_a_phone) >= 10
    assert all(state == [0, True] for state in on_a_phone), on_a_phone
    page.set_viewport_size({"width": 2400, "height": 900})
    page.wait_for_function(f"document.querySelectorAll('[data-scroll-focus]').length < {len(on_a_phone)}")
    assert all(state == [0, True] for state in page.evaluate(check))


# ---------------------------------------------------------------------------------------------------
# The 404 page, served as GitHub Pages serves it: the site under /attention-docs/, and 404.html with
# status 404 for any address that has no file.
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pages_url(site: Path, base_url: str) -> Iterator[str]:
    class GitHubPages(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def translate_path(self, path: str) -> str:
            if not path.startswith(BASE_PATH):
                return str(site / "no such file")
            return super().translate_path("/" + path.removeprefix(BASE_PATH))

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            if code != 404:
                super().send_error(code, message, explain)
                return
            body = (site / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(GitHubPages, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}{BASE_PATH}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("missing", ["no-such-page/", "zh/no-such-page/", "zh/notebooks/no-such-notebook/"])
def test_the_404_page_leads_readers_of_both_languages_home(page, pages_url: str, missing: str) -> None:
    failed = []
    # (Material asks for a sitemap.xml beside each language's link, and quietly does without one: see
    # test_browser.py.)
    sitemap = "/sitemap.xml"
    page.on(
        "response",
        lambda response: response.status >= 400 and not response.url.endswith(sitemap) and failed.append(response.url),
    )
    response = page.goto(pages_url + missing, wait_until="load")
    assert response.status == 404
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.locator("h1").inner_text() == "Page not found"
    # The page's own styles and scripts loaded (only the page itself answered 404).
    assert failed == [pages_url + missing]
    assert page.locator(".md-header").evaluate("header => getComputedStyle(header).position") == "sticky"
    # The language menu leads to each language's home page, not to some page built last (a notebook).
    menu = page.locator("a.md-select__link").evaluate_all("links => links.map(link => [link.hreflang, link.href])")
    assert menu == [["en", pages_url], ["zh", pages_url + "zh/"]]
    # The Chinese reader gets a heading and a sentence in Chinese, and a link to the Chinese home page.
    chinese = page.locator('section[lang="zh"]')
    assert chinese.locator("h2").inner_text() == "页面不存在"
    chinese.locator('a[hreflang="zh"]').click()
    page.wait_for_load_state("load")
    assert page.url == pages_url + "zh/"
    assert page.evaluate("document.documentElement.lang") == "zh"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_serious_violation_on_the_404_page(page, pages_url: str, axe_violations, scheme: str) -> None:
    page.emulate_media(color_scheme=scheme)
    load(page, pages_url + "no-such-page/")
    assert _scheme(page) == SCHEMES[scheme]
    violations = axe_violations(page)
    assert violations == [], f"{len(violations)} serious or critical violations:\n" + "\n".join(violations)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("url", ["zh/masks/", "zh/translation-status/", "translation-status/"])
def test_axe_finds_no_serious_violation_in_an_outdated_pages_banner_and_the_status_page(
    page, outdated_site: dict, axe_violations, url: str, scheme: str
) -> None:
    """The banner that lists an outdated page's sections, and the status table with its counts and reviewer,
    on a copy of the project where a page is outdated (tests/site/conftest.py)."""
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    load(page, outdated_site["url"] + url)
    assert _scheme(page) == SCHEMES[scheme]
    if url == "zh/masks/":
        assert page.locator(".translation-banner li a").count() == len(outdated_site["changed"])
    assert axe_violations(page) == []


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_axe_finds_no_serious_violation_on_the_hovered_search_box(
    page, base_url: str, axe_violations, lang, scheme
) -> None:
    """The header's search box under the pointer: Material's 0.7 opacity for hovered header buttons left its text
    at 3.66:1 (found when an earlier test left the pointer there)."""
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    load(page, base_url + LANGUAGES[lang])
    box = page.locator(".site-search__open")
    box.hover()
    page.wait_for_function(
        "b => getComputedStyle(b).backgroundColor === 'rgba(255, 255, 255, 0.12)'"
        " && getComputedStyle(b).opacity === '1'",
        arg=box.element_handle(),
    )
    assert axe_violations(page) == []
