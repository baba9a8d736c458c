"""Light pages: what a first visit downloads, compressed as a server sends it, stays within a budget.

Every response the browser receives while the page loads (HTML, CSS, scripts, fonts, images) counts: text
gzipped at level 6, as GitHub Pages and most servers send it; fonts and images as they are, since they are
compressed already. Nothing comes from a cache: the tab's cache is off, which gives the very responses that a
new browser context gives (measured on these 14 pages: the same files, the same sizes), without starting a
renderer for each page.
"""

from __future__ import annotations

import gzip
import random

import pytest

#: Budgets in KB, by kind of page (the issue's: a chapter 300 KB, a notebook 400 KB).
BUDGET = {"page": 300, "notebook": 400}
#: The home page, the glossary, the longest chapters and the one with the most formulas, and their notebooks.
PAGES = [
    prefix + page
    for prefix in ("", "zh/")
    for page in (
        "",
        "glossary/",
        "pitfalls/",
        "multi-head/",
        "scoring-functions/",
        "notebooks/multi-head/",
        "notebooks/scoring-functions/",
    )
]
ALREADY_COMPRESSED = (".woff2", ".woff", ".png", ".jpg", ".gif", ".webp", ".pagefind", ".pf_meta", ".pf_index")


def transferred(response) -> int:
    body = response.body()
    if response.url.split("?")[0].endswith(ALREADY_COMPRESSED):
        return len(body)
    return len(gzip.compress(body, compresslevel=6))


@pytest.fixture(scope="module")
def first_visit(uncached_tab):
    """A tab that visits every page as for the first time."""
    return uncached_tab()


@pytest.mark.parametrize("url", PAGES)
def test_first_visit_stays_within_the_budget(first_visit, load, base_url: str, url: str) -> None:
    page = first_visit
    # Whatever the page before is still sending in (its events not yet read), it is read here, before the
    # count starts: its response bodies are gone once the next page opens.
    page.goto("about:blank")
    responses = []

    def collect(response) -> None:
        responses.append(response)

    page.on("response", collect)
    try:
        load(page, base_url + url)
    finally:
        page.remove_listener("response", collect)
    # Nothing came from a cache: every stylesheet and script of the page was downloaded.
    files = page.evaluate(
        "[...document.querySelectorAll('link[rel=stylesheet][href], script[src]')].map(e => e.href || e.src)"
    )
    assert set(files) <= {response.url for response in responses}, f"{url}: some files came from a cache"
    sizes = {response.url.removeprefix(base_url): transferred(response) for response in responses}
    total = sum(sizes.values()) / 1024
    budget = BUDGET["notebook" if "notebooks/" in url else "page"]
    heaviest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert total <= budget, f"{url or 'home'}: {total:.0f} KB > {budget} KB; heaviest: {heaviest}"


def test_the_weight_check_can_fail() -> None:
    class Response:
        url = "x/index.html"

        @staticmethod
        def body() -> bytes:
            return random.Random(0).randbytes(400 * 1024)  # does not compress

    assert transferred(Response()) > 300 * 1024
