"""Shared fixtures: devices (CUDA cases marked ``gpu``), hypothesis profiles, the built site, and the
headless Chromium that the browser tests drive (``base_url``, ``browser``, ``page``).

The browser tests need Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``, or ``$CHROMIUM``) and
the ``playwright`` package. Without them they skip, unless ``REQUIRE_BROWSER=1`` (set by ``.ci/run``), which
turns a missing browser into a failure so CI can never pass by skipping them.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
HAS_CUDA = torch.cuda.is_available()

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


def pytest_report_header() -> str:
    cuda = torch.cuda.get_device_name(0) if HAS_CUDA else "none (gpu-marked tests are skipped)"
    return f"torch {torch.__version__}; CUDA device: {cuda}"


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole site, built once per test run with ``mkdocs build --strict``."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


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


@pytest.fixture(scope="session")
def base_url(site: Path) -> Iterator[str]:
    missing = _browser_missing()
    if missing:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)

    class Pages(http.server.SimpleHTTPRequestHandler):
        """The site under SITE_PATH, as GitHub Pages serves it; anything else is a 404."""

        def translate_path(self, path: str) -> str:
            if not path.startswith(SITE_PATH):
                return str(site / "404.html.absent")
            return super().translate_path("/" + path.removeprefix(SITE_PATH))

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Pages, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}{SITE_PATH}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser(base_url: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    tab = context.new_page()
    yield tab
    context.close()
