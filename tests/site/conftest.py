"""The site layer's fixtures: copies of the project (``copy_project``), built sites served as GitHub Pages
serves them (``base_url``, ``serve``), the headless Chromium that the browser tests drive (``browser``,
``page``, ``visited``, ``load``, ``dark_palette``, ``uncached_tab``), and the site as a translator's pull
request leaves it (``outdated_site``). The site itself is built once per run by ``tests/conftest.py``
(``site``), which starts the build early, and which lets no test outside this folder use it.

The browser tests need Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``, or ``$CHROMIUM``) and
the ``playwright`` package. Without them they skip, unless ``REQUIRE_BROWSER=1`` (set by ``.ci/run``), which
turns a missing browser into a failure so CI can never pass by skipping them.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------------------
# A copy of the project, for the tests that change pages and build the site from them
# ---------------------------------------------------------------------------------------------------

_IGNORED_ANYWHERE = shutil.ignore_patterns("__pycache__", "*.egg-info", ".coverage*")
#: Top-level folders only: tests/site/ is code, /site/ the build output.
_IGNORED_AT_THE_ROOT = {
    ".git", ".venv", "site", "dist", "build", "node_modules", ".pytest_cache", ".hypothesis", ".ruff_cache",
    "htmlcov", ".cache",
}  # fmt: skip


def _ignored(folder: str, names: list[str]) -> set[str]:
    ignored = _IGNORED_ANYWHERE(folder, names)
    return ignored | (_IGNORED_AT_THE_ROOT & set(names) if Path(folder) == ROOT else set())


def _git(root: Path, *args: str) -> str:
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.org", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def copy_project(site: Path, notebook_cache):
    """``copy_project(folder)``: the project copied into ``folder`` without its environment, build output or
    history, as a fresh Git repository with one commit; returns ``folder``."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def copy(root: Path) -> Path:
        shutil.copytree(ROOT, root, ignore=_ignored)
        _git(root, "init", "-q")
        _git(root, "add", ".")
        _git(root, "commit", "-q", "-m", "copy")
        # The npm packages, as dev.py installed them: the build runs KaTeX from node_modules (hooks/math.py).
        (root / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
        notebook_cache(root)
        return root

    return copy


@pytest.fixture(scope="session")
def notebook_cache(site: Path):
    """``notebook_cache(folder)``: mkdocs-jupyter's cache of rendered notebooks, as the suite's own build of the
    site left it, copied into ``folder``, for a build or a serve that runs there (the plugin keeps its cache in
    the folder MkDocs runs in). It then renders again only the notebooks that differ from the project's (the
    cache is keyed on the notebook's content and the plugin's options): a build of 7 s, not 16 s."""

    def copy(folder: Path) -> None:
        if (ROOT / ".cache" / "mkdocs-jupyter").is_dir():
            shutil.copytree(ROOT / ".cache" / "mkdocs-jupyter", folder / ".cache" / "mkdocs-jupyter")

    return copy


# ---------------------------------------------------------------------------------------------------
# The built site in a real browser (headless Chromium), for every test file that drives one.
# ---------------------------------------------------------------------------------------------------
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # window.gc(), for the tests that leave much garbage behind: axe-core copies the whole page for its checks
    # (tests/site/test_accessibility.py collects it at once, before the next test of that page runs).
    "--js-flags=--expose-gc",
]


#: Where GitHub Pages serves the site (site_url's path); the local server serves it there too, so that the
#: absolute links MkDocs writes (the home page's language switcher, the 404 page) work as they do there.
SITE_PATH = "/attention-docs/"


def _browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@contextlib.contextmanager
def _serve(folder: Path) -> Iterator[str]:
    """A built site in ``folder``, served under SITE_PATH as GitHub Pages serves it; anything else is a 404.
    Yields its address."""

    class Pages(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            if not path.startswith(SITE_PATH):
                return str(folder / "404.html.absent")
            return super().translate_path("/" + path.removeprefix(SITE_PATH))

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Pages, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{SITE_PATH}"
    finally:
        server.shutdown()
        server.server_close()


def _skip_without_a_browser() -> None:
    missing = _browser_missing()
    if missing:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="session")
def base_url(site: Path) -> Iterator[str]:
    _skip_without_a_browser()
    with _serve(site) as url:
        yield url


@pytest.fixture(scope="session")
def serve():
    """``with serve(folder) as url:`` another built site (a copy of the project's), served like the site."""
    _skip_without_a_browser()
    return _serve


@pytest.fixture(scope="session")
def browser(base_url: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


#: What a new tab gets: Playwright's default viewport.
VIEWPORT = {"width": 1280, "height": 720}


@pytest.fixture(scope="session")
def _tab(browser):
    """The tab this worker lends to every test that asks for ``page``. Opening a tab starts a renderer
    process; navigating one that is open does not, and costs about half the CPU (measured: 16 page loads
    took 10.7 s of Chromium's CPU in new tabs, 4.9 s in one tab, 7.5 s with about:blank between them)."""
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    tab = context.new_page()
    yield tab, context.new_cdp_session(tab)
    context.close()


@pytest.fixture
def page(_tab):
    """A tab for the test, as a new one would be: blank, the default viewport, no emulated media (palette),
    nothing in the storage of the sites it opens (Material keeps the palette there). Once the test is over:
    none of the event handlers it added, and blank again, so that nothing of its pages runs on into the next
    test."""
    tab, cdp = _tab
    tab.set_viewport_size(VIEWPORT)
    tab.emulate_media(media="null", color_scheme="null")
    added, origins = [], set()

    def on(event: str, handler) -> None:
        added.append((event, handler))
        type(tab).on(tab, event, handler)

    def opened(frame) -> None:
        url = urlsplit(frame.url)
        if url.scheme in ("http", "https"):
            origins.add(f"{url.scheme}://{url.netloc}")

    type(tab).on(tab, "framenavigated", opened)
    tab.on = on
    yield tab
    del tab.on
    for event, handler in [*added, ("framenavigated", opened)]:
        tab.remove_listener(event, handler)
    tab.goto("about:blank")
    tab.mouse.move(0, 0)  # where a new tab's pointer is
    for origin in origins:
        cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "local_storage,session_storage"})


#: How long the network must stay quiet once a page has loaded before everything it loads is in: Chromium asks
#: for the favicon after the load event (in 8 of 56 pages, measured), within 150 ms. (Playwright's
#: "networkidle" waits 500 ms: the same requests for every page of the site, a third of a second later.)
QUIET_S = 0.15


class _Traffic:
    """The requests a tab makes, followed as they start and end, until ``close``."""

    def __init__(self, tab) -> None:
        self.tab, self.pending, self.last = tab, set(), time.monotonic()
        self.handlers = [("request", self._started), ("requestfinished", self._ended), ("requestfailed", self._ended)]
        for event, handler in self.handlers:
            type(tab).on(tab, event, handler)  # not the page fixture's tab.on: these are removed by close

    def _started(self, request) -> None:
        self.pending.add(request)
        self.last = time.monotonic()

    def _ended(self, request) -> None:
        self.pending.discard(request)

    def settle(self, url: str) -> None:
        """Wait until no request is in flight and none has started for ``QUIET_S``."""
        deadline = time.monotonic() + 30
        while self.pending or time.monotonic() - self.last < QUIET_S:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: still loading after 30 s: {[request.url for request in self.pending]}")
            self.tab.wait_for_timeout(10)

    def close(self) -> None:
        for event, handler in self.handlers:
            self.tab.remove_listener(event, handler)


def _open(tab, url: str) -> None:
    """Open ``url`` until its load event and its fonts: the text at its final width and height."""
    tab.goto(url, wait_until="load")
    tab.evaluate("document.fonts.ready.then(() => null)")


def _load(tab, url: str) -> None:
    traffic = _Traffic(tab)
    try:
        _open(tab, url)
        traffic.settle(url)
    finally:
        traffic.close()


@pytest.fixture(scope="session")
def load():
    """``load(tab, url)``: open ``url`` in ``tab`` and return once it has loaded all it will: past the load
    event, its fonts ready, no request in flight and none started for ``QUIET_S``."""
    return _load


@contextlib.contextmanager
def _dark_palette(tab) -> Iterator[None]:
    tab.locator("label[for=__palette_1]").click()  # the toggle that the light palette shows
    try:
        tab.wait_for_function("document.body.dataset.mdColorScheme === 'slate'")
        yield
    finally:
        tab.locator("label[for=__palette_0]").click()
        tab.wait_for_function("document.body.dataset.mdColorScheme === 'default'")


@pytest.fixture(scope="session")
def dark_palette():
    """``with dark_palette(tab):`` the page in the dark palette, switched to with the header's toggle as a reader
    does, and back to the light one after, for the tests that look at the same page next."""
    return _dark_palette


#: The screens the browser tests look at pages on, by their width: a desktop and a phone.
SCREENS = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}


class Visit:
    """A page of the site open in a tab on one screen, and what it has done since it was opened."""

    def __init__(self, tab, url: str, width: str) -> None:
        from docs_tools import config  # here, not at the top: the library's tests run without it (dev.py package)

        self.tab, self.url, self.width = tab, url, width
        first = url.split("/", 1)[0]
        self.lang = first if first in {language.locale for language in config.languages()} else config.SOURCE
        #: Every address the page has asked for.
        self.requests: list[str] = []
        #: What has gone wrong: uncaught errors, responses of 400 or more, console errors.
        self.errors: list[str] = []
        self._traffic = _Traffic(tab)
        self._handlers = [
            ("request", lambda request: self.requests.append(request.url)),
            ("pageerror", lambda error: self.errors.append(str(error))),
            (
                "response",
                lambda response: response.status >= 400 and self.errors.append(f"{response.status} {response.url}"),
            ),
            ("console", lambda message: message.type == "error" and self.errors.append(f"console: {message.text}")),
        ]
        for event, handler in self._handlers:
            type(tab).on(tab, event, handler)

    def settle(self) -> None:
        """Wait until the page has loaded all it will (no request for ``QUIET_S``), for a test of what it loads."""
        self._traffic.settle(self.url)

    def close(self) -> None:
        self._traffic.close()
        for event, handler in self._handlers:
            self.tab.remove_listener(event, handler)


@pytest.fixture(scope="session")
def _visit_tab(browser):
    """The tab that ``visited`` loads pages in, and the visit open in it (one at a time)."""
    context = browser.new_context(accept_downloads=True, permissions=["clipboard-read", "clipboard-write"])
    yield context.new_page(), {}
    context.close()


@pytest.fixture
def visited(request: pytest.FixtureRequest, _visit_tab, base_url: str) -> Visit:
    """The page ``request.param`` names, ``(url, width)``, loaded once for all the tests that look at it.

    A test takes it through ``@pytest.mark.parametrize("visited", [(url, "390"), ...], indirect=True)``.
    The tests of one page, whatever their module, run one after another on one pytest-xdist worker (see
    ``pytest_collection_modifyitems``), and that worker's tab loads the page once for all of them: about
    100 page loads fewer than a load per test. A test may click and scroll, as a reader does; one that would
    leave the page, or change it for the tests after it, takes a ``page`` of its own instead."""
    tab, open_ = _visit_tab
    if open_.get("key") == request.param:
        return open_["visit"]
    if open_:
        open_.pop("visit").close()
        open_.clear()
    url, width = request.param
    tab.set_viewport_size(SCREENS[width])
    open_["visit"] = visit = Visit(tab, url, width)
    _open(tab, base_url + url)
    open_["key"] = request.param  # loaded: the next test of this page finds it open
    return visit


@pytest.fixture(scope="session")
def uncached_tab(browser):
    """``uncached_tab(**options)``: a new tab, in a browser context made with ``options``, that fetches every
    file anew (its cache off), so that each page it opens, it opens as on a first visit."""
    contexts = []

    def open_tab(**options):
        context = browser.new_context(**options)
        contexts.append(context)
        tab = context.new_page()
        cdp = context.new_cdp_session(tab)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        return tab

    yield open_tab
    for context in contexts:
        context.close()


# ---------------------------------------------------------------------------------------------------
# The site as a translator's pull request leaves it
# ---------------------------------------------------------------------------------------------------

#: The two English sections of masks.md that the copy changes, and the page it marks reviewed.
CHANGED = {
    "setup": ("## Where we start { #setup }\n\n", "## Where we start { #setup }\n\nA new first sentence.\n\n"),
    "summary": ("## Summary { #summary }\n\n", "## Summary { #summary }\n\nIn short:\n\n"),
}
REVIEWED, REVIEWER = "attention-scores.md", "li-wei"


def _python(root: Path, *args: str) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="session")
def outdated_site(tmp_path_factory: pytest.TempPathFactory, copy_project, serve) -> Iterator[dict]:
    """A copy of the project in which two sections of the English masks page changed since their translation
    and a second person reviewed the Chinese attention-scores page, built and served; yields its address
    (``url``), the changed sections' ids (``changed``), the reviewed page and the reviewer."""
    root = copy_project(tmp_path_factory.mktemp("outdated") / "project")
    english = root / "docs" / "en" / "masks.md"
    text = english.read_text(encoding="utf-8")
    for old, new in CHANGED.values():
        assert old in text
        text = text.replace(old, new, 1)
    english.write_text(text, encoding="utf-8")
    _python(root, "-m", "docs_tools.translations", "review", f"zh/{REVIEWED}", "--by", REVIEWER)
    _python(root, "-m", "mkdocs", "build", "--strict", "--site-dir", str(root / "site"))
    with serve(root / "site") as url:
        yield {"url": url, "changed": list(CHANGED), "reviewed": REVIEWED, "reviewer": REVIEWER}


# ---------------------------------------------------------------------------------------------------
# axe-core: the accessibility checks of any test (tests/site/test_accessibility.py has the site-wide ones).
# ---------------------------------------------------------------------------------------------------
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: WCAG 2.0, 2.1 and 2.2 at levels A and AA, and axe's best practices.
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
FAILING_IMPACTS = ("serious", "critical")


@pytest.fixture(scope="session")
def axe(base_url: str) -> Path:
    if not AXE.is_file():
        missing = f"axe-core is not installed at {AXE.relative_to(ROOT)} (python3 dev.py test installs it)"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    return AXE


def serious_violations(page, axe: Path) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line per element: the rule,
    its impact, a selector for the element and the element's HTML."""
    page.add_script_tag(path=str(axe))
    violations = page.evaluate(
        # resultTypes: every node of every violation, as before, but no details of what passed (a third faster).
        "async tags => (await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']}))"
        ".violations",
        TAGS,
    )
    # axe-core's copy of the page, collected now (window.gc, conftest.py's CHROMIUM_ARGS): left to the collector,
    # it was collected in the middle of whatever ran next in the tab, and made every change to the page there
    # about eight times slower (measured: the explorer's sweep of every setting, 6 s instead of 0.7 s, in 2 of 6
    # runs after the light and the dark palette's checks; in 8 of 8 runs, 0.7 s after this call, which takes 55 ms).
    page.evaluate("gc()")
    return [
        f"{violation['id']} ({violation['impact']}): {' '.join(map(str, node['target']))}\n"
        f"    {node['html'][:300]}\n    {node['failureSummary'].splitlines()[-1].strip()}"
        for violation in violations
        if violation["impact"] in FAILING_IMPACTS
        for node in violation["nodes"]
    ]


@pytest.fixture(scope="session")
def axe_violations(axe: Path):
    """``axe_violations(tab)``: axe-core's serious and critical violations on the page as it is now, one line
    per element (``serious_violations``); the test skips where axe-core is missing (``axe``)."""
    return functools.partial(serious_violations, axe=axe)


# ---------------------------------------------------------------------------------------------------
# Layout shifts: an interactive piece is drawn before anything below it is laid out, so nothing moves.
# ---------------------------------------------------------------------------------------------------
#: The layout shifts of the page since it started loading (the Layout Instability API), none of them after input:
#: for each element that moved, how far down it moved.
LAYOUT_SHIFTS = """() => new Promise(resolve => {
  const moves = entries => entries.filter(e => !e.hadRecentInput)
    .flatMap(e => e.sources.map(s => s.currentRect.y - s.previousRect.y));
  new PerformanceObserver(list => resolve(moves(list.getEntries()))).observe({ type: "layout-shift", buffered: true });
  setTimeout(() => resolve([]), 500);
})"""
#: The most a line moves when KaTeX's fonts arrive, on pages with or without a piece (0.3 to 1 px, measured).
FONT_SHIFT_PX = 2


def _largest_shift(page) -> float:
    return max((abs(move) for move in page.evaluate(LAYOUT_SHIFTS)), default=0.0)


@pytest.fixture(scope="session")
def largest_shift():
    """``largest_shift(tab)``: the farthest, in pixels, anything on the page moved by itself since it started
    loading (the Layout Instability API; a move right after the reader's input does not count)."""
    return _largest_shift


@pytest.fixture(scope="session")
def font_shift_px() -> int:
    """What a line may move when KaTeX's fonts arrive (``FONT_SHIFT_PX``)."""
    return FONT_SHIFT_PX


# ---------------------------------------------------------------------------------------------------
# Contrast: the text of the interactive pieces, measured as a reader's eye gets it.
# ---------------------------------------------------------------------------------------------------
#: For each shown element of ``root`` with text of its own: WCAG's contrast ratio of its color against what is
#: behind it, both composited (alpha included) over the backgrounds up the tree, once transitions (a button's fill
#: on hover or focus) have run. A switched-off control is exempt, as WCAG has it.
TEXT_CONTRASTS = """async root => {
  await Promise.all(root.getAnimations({ subtree: true }).map(animation => animation.finished));
  const parse = c => { const v = c.match(/[\\d.]+/g).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat(1);
  const behind = element => {
    const layers = [];
    for (let e = element; e; e = e.parentElement) {
      const bg = parse(getComputedStyle(e).backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] === 1) break;
    }
    return layers.reduceRight((below, layer) => over(layer, below), [255, 255, 255, 1]);
  };
  const linear = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const luminance = ([r, g, b]) => 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  const texts = [...root.querySelectorAll("*")].filter(e =>
    [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) && e.getClientRects().length
    && !e.closest("[aria-disabled=true], :disabled"));
  return texts.map(e => {
    const bg = behind(e), fg = over(parse(getComputedStyle(e).color), bg);
    const [a, b] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
    return { what: typeof e.className === "string" && e.className ? e.className : e.tagName.toLowerCase(),
             text: e.textContent.trim().slice(0, 30), background: `rgb(${bg.slice(0, 3).map(Math.round).join(", ")})`,
             contrast: (a + 0.05) / (b + 0.05) };
  });
}"""


@pytest.fixture(scope="session")
def text_contrasts():
    """``text_contrasts(locator)``: for each shown element of the piece with text of its own, ``what`` (its class,
    or its tag), ``text``, ``background`` (what is behind it, composited) and ``contrast`` (WCAG's ratio)."""

    def measure(root) -> list[dict]:
        return root.evaluate(TEXT_CONTRASTS)

    return measure
