"""Shared fixtures: devices (CUDA cases marked ``gpu``), hypothesis profiles, the built site, and the
headless Chromium that the browser tests drive (``base_url``, ``browser``, ``page``).

The browser tests need Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``, or ``$CHROMIUM``) and
the ``playwright`` package. Without them they skip, unless ``REQUIRE_BROWSER=1`` (set by ``.ci/run``), which
turns a missing browser into a failure so CI can never pass by skipping them.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
HAS_CUDA = torch.cuda.is_available()
if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest-xdist runs one worker per core: torch's own threads in each would only fight over the cores
    # (the library's tests took 23 s on 2 workers with torch's default of 2 threads each, 9 s with 1).
    torch.set_num_threads(1)
    # The same for what a worker starts: the notebooks' kernels (docs_tools.kernels applies it to a forked
    # kernel: 22 notebooks took 40 core-s with 2 threads each, 34 with 1) and subprocesses.
    os.environ["OMP_NUM_THREADS"] = "1"

#: Parametrize over this to run a test on the CPU and, where present, on CUDA.
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")]),
]

# "default" is what the README's test command runs: fixed examples (derandomize), so a failure
# reproduces on every machine. "thorough" draws fresh examples, ten times as many.
settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    return torch.device(request.param)


def pytest_sessionstart(session: pytest.Session) -> None:
    # The GPU job sets REQUIRE_CUDA=1: there, a torch without CUDA must fail the run, not skip the
    # gpu-marked tests and pass.
    if os.environ.get("REQUIRE_CUDA") == "1" and not HAS_CUDA:
        raise pytest.UsageError(f"REQUIRE_CUDA=1, but torch {torch.__version__} sees no CUDA device")
    config = session.config
    if _is_xdist_controller(config) and _may_need_the_site(config):
        # pytest-xdist pairs whole groups of tests (a page's browser checks) with workers, largest first, so
        # both workers start on browser tests: the build they would start only once they have collected (about
        # 9 s of it left then) is started here, by the controller, which runs no test, while they start up.
        paths = _site_paths(config._tmp_path_factory.getbasetemp())  # the workers' basetemp's parent
        builder = threading.Thread(target=_build_site, args=paths, daemon=True)
        builder.start()
        config.stash[_CONTROLLER_BUILD] = builder


_CONTROLLER_BUILD = pytest.StashKey[threading.Thread]()


def pytest_unconfigure(config: pytest.Config) -> None:
    builder = config.stash.get(_CONTROLLER_BUILD, None)
    if builder is not None:
        builder.join()  # not left building into a folder that pytest removes


def _is_xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.pluginmanager.has_plugin("dsession")


def _may_need_the_site(config: pytest.Config) -> bool:
    """Whether the tests named on the command line (the testpaths when none) include some that use the built
    site: everything under tests/ but the library's tests, which also run without the site's packages."""
    if config.getoption("--page"):
        return False
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path in (ROOT, ROOT / "tests") or any(
            path.is_relative_to(ROOT / "tests" / layer) for layer in ("site", "pages", "tooling")
        ):
            return True
    return False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--page",
        metavar="docs/LANG/PAGE.md",
        help="only what checks this page and needs no site build: its code blocks and outputs, its notebook, "
        "its translation and code-width checks (python3 dev.py page runs this)",
    )


def _page_patterns(page: Path) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """How a test parametrized with ``page`` (docs/<lang>/<name>.md) names it (``zh/masks``, ``zh/masks.md``,
    ``docs/zh/masks.md``): in its own language, and in any language (for an English page, the structure checks
    of its translations, which compare them with it)."""
    lang, name = page.parent.name, page.stem
    own, any_language = (
        re.compile(rf"(?<![\w-])(?:docs/)?(?:{languages})/{re.escape(name)}(?:\.md)?(?![\w-])")
        for languages in (lang, "[a-z]{2,3}(?:-[A-Za-z]+)?" if lang == "en" else lang)
    )
    return own, any_language


def _the_page(config: pytest.Config) -> Path:
    page = Path(config.getoption("--page")).resolve()
    if page.suffix != ".md" or page.parent.parent != ROOT / "docs" or not page.is_file():
        raise pytest.UsageError(f"--page: expected a page as docs/<lang>/<page>.md, got {config.getoption('--page')}")
    return page


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--page"):
        _the_page(config)  # before the page is collected: a wrong path is named as such, not as a missing test


def _only_the_page(config: pytest.Config, items: list[pytest.Item]) -> None:
    page = _the_page(config)
    own, any_language = _page_patterns(page)

    def checks_the_page(item: pytest.Item) -> bool:
        if item.path == page:
            return True
        callspec = getattr(item, "callspec", None)
        pattern = any_language if item.path.name == "test_translations.py" else own
        return callspec is not None and pattern.search(callspec.id) is not None

    kept = [item for item in items if "site" not in getattr(item, "fixturenames", ()) and checks_the_page(item)]
    kept_ids = {id(item) for item in kept}
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept_ids])
    items[:] = kept


#: The layers of the suite, one folder each under tests/, and the marker that selects each (``-m lib``).
LAYERS = ("lib", "exercises", "pages", "site", "tooling")


def _layer(path: Path) -> str | None:
    """A test's layer: its folder under tests/; a page's code blocks are the pages layer. None for a test
    from elsewhere (dev.py package runs one beside the installed wheels, with the packages')."""
    if path.suffix == ".md":
        return "pages"
    if not path.is_relative_to(ROOT / "tests"):
        return None
    folder = path.relative_to(ROOT / "tests").parts[0]
    if folder not in LAYERS:
        raise pytest.UsageError(
            f"{path}: a test file goes in the folder of its layer, one of tests/{{{','.join(LAYERS)}}}"
        )
    return folder


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--page``, keep only what checks that page. The tests that look at one page in the browser
    (``visited``) go to one pytest-xdist worker, which loads it once for all of them. Then run the tests
    that need the built site last, and among them first those that build copies of the project (the
    slowest, about 30 s each): the site is built in the background from the first test on (``_site_build``),
    while the tests that need none run, and no long test is left for the end."""
    if config.getoption("--page"):
        _only_the_page(config, items)
    for item in items:
        layer = _layer(item.path)
        if layer is not None:
            item.add_marker(layer)
        visit = _visit_of(item)
        if visit:
            item.add_marker(pytest.mark.xdist_group(f"visit-{_visit_id(visit)}"))
    # The tests of one visited page one after another, where the first of them was.
    keys = [_visit_of(item) or index for index, item in enumerate(items)]  # a test without a page: its own
    first: dict[object, int] = {}
    for index, key in enumerate(keys):
        first.setdefault(key, index)
    position = {id(item): first[key] for item, key in zip(items, keys, strict=True)}
    items.sort(key=lambda item: position[id(item)])

    def order(item: pytest.Item) -> int:
        fixtures = getattr(item, "fixturenames", ())
        return 0 if "site" not in fixtures else 1 if "copy_project" in fixtures else 2

    items.sort(key=order)


def _visit_of(item: pytest.Item) -> tuple[str, str] | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("visited") if callspec is not None else None


def _visit_id(visit: tuple[str, str]) -> str:
    url, width = visit
    return f"{url or 'home'}@{width}"


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """``visited`` parameters, (url, width), read as ``zh/masks/@390``."""
    return _visit_id(val) if argname == "visited" and isinstance(val, tuple) else None


def pytest_report_header() -> str:
    cuda = torch.cuda.get_device_name(0) if HAS_CUDA else "none (gpu-marked tests are skipped)"
    return f"torch {torch.__version__}; CUDA device: {cuda}"


def _site_paths(shared: Path) -> tuple[Path, Path, Path]:
    """Where the site is built, where a failed build says why, and the lock the builders take."""
    return shared / "site", shared / "site-build-failed.txt", shared / "site.lock"


def _mkdocs() -> str:
    """The ``mkdocs`` command of the environment the tests run in."""
    scripts = Path(sys.executable).parent
    found = shutil.which("mkdocs", path=str(scripts))
    if found is None:
        pytest.fail(f"no mkdocs command in {scripts}: python3 dev.py test installs it", pytrace=False)
    return found


def _build_site(out: Path, failure: Path, lock: Path) -> None:
    """Build the site into ``out`` unless it is there already, or its build failed (then ``failure`` says how)."""
    from filelock import FileLock  # here, not at the top: the library's tests run without it (dev.py package)

    with FileLock(lock):
        if not out.is_dir() and not failure.exists():
            # MkDocs' own command, as a writer or a Pages recipe types it in the activated .venv: its hooks find
            # the site's tooling installed there (docs_tools/pyproject.toml), not on the path of `python -m`.
            result = subprocess.run(
                [_mkdocs(), "build", "--strict", "--site-dir", str(out)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            )
            if result.returncode != 0:
                shutil.rmtree(out, ignore_errors=True)
                failure.write_text(f"{result.stdout}\n{result.stderr}", encoding="utf-8")


@pytest.fixture(scope="session", autouse=True)
def _site_build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Where the site is built, and the build started at once if any test of the run will need it.

    Under pytest-xdist the controller has started it already (pytest_sessionstart), into the run's shared
    temporary folder; every worker starts it too, in a thread that waits on a file lock for the build under
    way and then finds the site built. Run without xdist, this thread builds it (about 6 s) while the tests
    that need no site go on."""
    shared = tmp_path_factory.getbasetemp()
    # (Not pytest-xdist's worker_id fixture: autouse, this runs beside the installed wheel too, without xdist.)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder that every worker's own base folder is in
    paths = _site_paths(shared)
    builder = None
    if any("site" in getattr(item, "fixturenames", ()) for item in request.session.items):
        builder = threading.Thread(target=_build_site, args=paths, daemon=True)
        builder.start()
    yield paths
    if builder is not None:
        builder.join()  # not left building into a folder that pytest removes


@pytest.fixture(scope="session")
def site(_site_build: tuple[Path, Path, Path]) -> Path:
    """The whole site, built once per test run with ``mkdocs build --strict``; a failed build is reported by
    every test that needs it."""
    out, failure, _ = _site_build
    _build_site(*_site_build)  # waits for the build under way, or builds it (a test run on its own)
    if failure.exists():
        pytest.fail(f"mkdocs build --strict failed:\n{failure.read_text(encoding='utf-8')}", pytrace=False)
    return out


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
def copy_project(site: Path):
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
        # mkdocs-jupyter's cache of rendered notebooks, as the suite's own build of the site left it: the copy's
        # builds render again only the notebooks that differ from the project's (the cache is keyed on the
        # notebook's content and the plugin's options).
        if (ROOT / ".cache" / "mkdocs-jupyter").is_dir():
            shutil.copytree(ROOT / ".cache" / "mkdocs-jupyter", root / ".cache" / "mkdocs-jupyter")
        return root

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
