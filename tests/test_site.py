"""The site builds with ``mkdocs build --strict`` in both languages and loads nothing from another host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["index.html", "api/index.html"]
# Anything the browser fetches by itself: scripts, stylesheets, icons, preloads, images, frames, CSS.
FETCHED = re.compile(
    r"""<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=["']([^"']+)["']"""
    r"""|<link\b[^>]*\bhref=["']([^"']+)["']"""
    r"""|url\(\s*["']?([^"')]+)["']?\s*\)"""
    r"""|@import\s+["']([^"']+)["']"""
)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
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


@pytest.mark.parametrize("prefix", ["", "zh/"])
@pytest.mark.parametrize("page", PAGES)
def test_page_exists_in_both_languages(site: Path, prefix: str, page: str) -> None:
    html = (site / prefix / page).read_text(encoding="utf-8")
    lang = "zh" if prefix else "en"
    assert re.search(rf'<html[^>]*\blang="{lang}', html), f"{prefix}{page} is not marked lang={lang}"


def test_api_reference_documents_every_public_name(site: Path) -> None:
    import attention_lib

    html = (site / "api/index.html").read_text(encoding="utf-8")
    missing = []
    for name in attention_lib.__all__:
        module = getattr(getattr(attention_lib, name), "__module__", None)
        if not (module or "").startswith("attention_lib"):  # constants such as JOURNEY_WORDS
            module = "attention_lib.data"
        if f'id="{module}.{name}"' not in html:
            missing.append(f"{module}.{name}")
    assert not missing, f"not in the API reference: {missing}"


def test_headings_have_the_same_ids_in_both_languages(site: Path) -> None:
    def ids(path: Path) -> list[str]:
        return re.findall(r'<h[1-6][^>]*\bid="([^"]+)"', path.read_text(encoding="utf-8"))

    for page in PAGES:
        assert ids(site / page) == ids(site / "zh" / page), page


def external_fetches(text: str) -> list[str]:
    """The URLs in ``text`` that a browser would fetch from another host on its own."""
    urls = (next(group for group in match.groups() if group) for match in FETCHED.finditer(text))
    return [url for url in urls if re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url, re.IGNORECASE)]


def test_no_request_leaves_the_site(site: Path) -> None:
    offenders = [
        f"{path.relative_to(site)}: {url}"
        for path in sorted(site.rglob("*"))
        if path.suffix in {".html", ".css", ".js"}
        for url in external_fetches(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not offenders, "resources fetched from another host:\n" + "\n".join(offenders[:20])


def test_the_external_request_check_can_fail() -> None:
    """The check above must catch the usual ways a page pulls in a CDN or web font, and nothing local."""
    samples = [
        '<script src="https://cdn.jsdelivr.net/npm/katex/dist/katex.min.js"></script>',
        '<link rel="stylesheet" href="//fonts.googleapis.com/css?family=Roboto">',
        "@font-face { src: url(https://fonts.gstatic.com/s/roboto.woff2) }",
        '@import "https://example.com/x.css";',
    ]
    for sample in samples:
        assert len(external_fetches(sample)) == 1, sample
    local = '<script src="../assets/javascripts/bundle.js"></script><link rel="stylesheet" href="/assets/x.css">'
    assert external_fetches(local) == []
