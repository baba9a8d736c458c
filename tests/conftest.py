"""What every layer shares: devices (CUDA cases marked ``gpu``), hypothesis profiles, the layers themselves
(each test marked by its folder, ``-m lib``), ``--page``, the order tests run in, and the built site
(``site``), whose build starts at once so that it is ready when the site layer needs it. Only tests in
``tests/site`` may use the site; the browser and the project's copies are that layer's own fixtures
(``tests/site/conftest.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

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


@pytest.fixture
def sdpa_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The keyword arguments of every call of F.scaled_dot_product_attention while the test runs, in order."""
    calls: list[dict] = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    return calls


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
    """Whether the tests named on the command line (the testpaths when none) include the site layer, the one
    layer that uses the built site."""
    if config.getoption("--page"):
        return False
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path in (ROOT, ROOT / "tests") or path.is_relative_to(ROOT / "tests" / "site"):
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
        if layer not in (None, "site") and "site" in getattr(item, "fixturenames", ()):
            # Each test in the layer its needs say: `-m "not site"` (dev.py test --fast) must need no build.
            raise pytest.UsageError(f"{item.nodeid} uses the built site: it belongs in tests/site")
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
