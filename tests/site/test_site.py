"""The site builds with ``mkdocs build --strict`` in both languages and loads nothing from another host."""

from __future__ import annotations

import importlib.metadata
import itertools
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from docs_tools import config as site_config
from docs_tools import records

ROOT = Path(__file__).resolve().parents[2]
SOURCES = records.pages()  # the English pages, as paths relative to docs/en
#: Built page of each source page: index.md -> index.html, masks.md -> masks/index.html.
PAGES = {
    source: "index.html" if source == "index.md" else source.removesuffix(".md") + "/index.html" for source in SOURCES
}
REPO = "https://github.com/attention-docs/attention-docs"
#: Where the site is served on GitHub Pages; absolute links (the 404 page, the home page's language
#: switcher) start with it.
BASE_PATH = "/attention-docs/"


def _from_root(site: Path, href: str) -> Path:
    """The file an absolute link such as /attention-docs/zh/ points to in the built site."""
    assert href.startswith(BASE_PATH) or href == BASE_PATH.rstrip("/"), f"{href} is outside the site"
    return site / href.removeprefix(BASE_PATH.rstrip("/")).lstrip("/")


# Anything the browser fetches by itself: scripts, stylesheets, icons, preloads, images, frames, CSS.
FETCHED = re.compile(
    r"""<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=["']([^"']+)["']"""
    # (a canonical or alternate-language <link> names a page; the browser does not fetch it)
    r"""|<link\b(?![^>]*\brel=["'](?:canonical|alternate)["'])[^>]*\bhref=["']([^"']+)["']"""
    r"""|url\(\s*["']?([^"')]+)["']?\s*\)"""
    r"""|@import\s+["']([^"']+)["']"""
)


@pytest.mark.parametrize("prefix", ["", "zh/"])
@pytest.mark.parametrize("page", PAGES.values())
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

    for page in PAGES.values():
        assert ids(site / page) == ids(site / "zh" / page), page
        # Python-Markdown's default slugs turn a Chinese heading into "_1", "_2", ...
        assert not [id_ for id_ in ids(site / "zh" / page) if re.fullmatch(r"_\d+", id_)], page


@pytest.mark.parametrize(("source", "page"), PAGES.items())
def test_edit_link_opens_the_source_of_the_readers_language(site: Path, source: str, page: str) -> None:
    for prefix, lang in (("", "en"), ("zh/", "zh")):
        html = (site / prefix / page).read_text(encoding="utf-8")
        edit_links = re.findall(r'<a href="([^"]+)"[^>]*class="md-content__button md-icon"', html)
        assert f"{REPO}/edit/main/docs/{lang}/{source}" in edit_links, f"{prefix}{page}: {edit_links}"
        assert (ROOT / "docs" / lang / source).exists()


@pytest.mark.parametrize("page", PAGES.values())
def test_language_switcher_keeps_the_reader_on_the_same_page(site: Path, page: str) -> None:
    def switcher(path: Path) -> dict[str, str]:
        html = path.read_text(encoding="utf-8")
        links = re.findall(r'<a href="([^"]*)" hreflang="(\w+)" class="md-select__link"', html)
        return {
            lang: os.path.normpath(_from_root(site, href) if href.startswith("/") else path.parent / href)
            for href, lang in links
        }

    for path in (site / page, site / "zh" / page):
        assert switcher(path) == {
            "en": os.path.normpath((site / page).parent),
            "zh": os.path.normpath((site / "zh" / page).parent),
        }, path


def test_math_is_typeset_by_the_sites_own_katex(site: Path) -> None:
    """At build time (hooks/math.py): the page holds KaTeX's output, and loads only KaTeX's stylesheet."""
    html = (site / "index.html").read_text(encoding="utf-8")
    # The home page shows a formula: its HTML and MathML, and no TeX for a script to typeset.
    assert '<span class="arithmatex"><span class="katex"><span class="katex-mathml"><math xmlns=' in html
    assert '<span class="arithmatex">\\(' not in html
    css = "assets/vendor/katex/katex.min.css"
    assert (site / css).is_file()
    assert f'<link rel="stylesheet" href="{css}">' in html
    assert list((site / "assets/vendor/katex/fonts").glob("KaTeX_Main-Regular.woff2"))
    # No script typesets in the browser any more.
    for script in ("katex.min.js", "auto-render.min.js", "math.js"):
        assert script not in html, script
        assert not list(site.rglob(script)), script


def test_every_local_reference_resolves(site: Path) -> None:
    """Scripts, styles, fonts, images and links between pages all exist in the built site."""
    missing = []
    for path in sorted(site.rglob("*")):
        if path.suffix not in {".html", ".css"} or ("vendor" in path.parts and path.suffix == ".html"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        hrefs = re.findall(r"""<a\b[^>]*\bhref=["']([^"'#]+)""", text) if path.suffix == ".html" else []
        fetched = (next(group for group in match.groups() if group) for match in FETCHED.finditer(text))
        for url in [*fetched, *hrefs]:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith(("#", "data:", "mailto:")) or not parts.path:
                continue
            target = _from_root(site, unquote(parts.path)) if url.startswith("/") else path.parent / unquote(parts.path)
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                missing.append(f"{path.relative_to(site)}: {url}")
    assert not missing, "\n".join(missing[:30])


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


# ---------------------------------------------------------------------------------------------------
# The page frame in the page's language
# ---------------------------------------------------------------------------------------------------

#: Strings of Material's page frame that mkdocs.yml and hooks/ui_language.py translate: the heading
#: anchors' title, the palette toggle's names (title and aria-label), the meta description.
FRAME_STRINGS = re.compile(
    r'<a class="headerlink"[^>]*\btitle="(?P<permalink>[^"]*)"'
    r'|<label class="md-header__button md-icon" title="(?P<toggle>[^"]*)" for="__palette_'
    r'|<input class="md-option"[^>]*\baria-label="(?P<option>[^"]*)"'
    r'|<meta name="description" content="(?P<description>[^"]*)"'
)
HAN = re.compile(r"[\u4e00-\u9fff]")
PAGE_PAIR = ("masks/index.html", "zh/masks/index.html")


def frame_strings(html: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for match in FRAME_STRINGS.finditer(html):
        kind = match.lastgroup
        found.setdefault(kind, set()).add(match.group(kind))
    return found


def test_the_page_frame_speaks_the_pages_language(site: Path) -> None:
    """On every page (chapters, notebooks, the 404 page), these strings are in the page's language."""
    wrong = []
    pages = [path for path in sorted(site.rglob("*.html")) if "assets" not in path.relative_to(site).parts]
    notebooks = list((ROOT / "docs" / "en" / "notebooks").glob("*.ipynb"))
    assert len(pages) == 2 * (len(PAGES) + len(notebooks)) + 1  # both languages, and the 404 page
    for path in pages:
        html = path.read_text(encoding="utf-8")
        lang = re.search(r'<html[^>]*\blang="(\w+)', html).group(1)
        found = frame_strings(html)
        assert {"toggle", "option", "description"} <= found.keys(), path
        for kind, strings in found.items():
            for string in strings:
                if (lang == "zh") != bool(HAN.search(string)):
                    wrong.append(f"{path.relative_to(site)} (lang={lang}): {kind} {string!r}")
    assert not wrong, "\n".join(wrong[:20])
    # Chapter pages have heading anchors in both languages, each titled in its own.
    english, chinese = (frame_strings((site / path).read_text(encoding="utf-8")) for path in PAGE_PAIR)
    assert english["permalink"] == {"Permanent link"}
    assert len(chinese["permalink"]) == 1
    assert HAN.search(chinese["permalink"].pop())


def test_the_frame_language_check_can_fail() -> None:
    english = (
        '<a class="headerlink" href="#x" title="Permanent link">¶</a>'
        '<label class="md-header__button md-icon" title="Switch to dark mode" for="__palette_1" hidden>'
        '<input class="md-option" data-md-color-media="x" aria-label="Switch to dark mode" type="radio">'
        '<meta name="description" content="How attention works">'
    )
    assert frame_strings(english) == {
        "permalink": {"Permanent link"},
        "toggle": {"Switch to dark mode"},
        "option": {"Switch to dark mode"},
        "description": {"How attention works"},
    }


def _verified_with_words() -> dict[str, str]:
    """The footer's versions line per language, as mkdocs.yml words it (extra.ui, overridden per language)."""
    config = site_config.config()
    i18n = next(plugin["i18n"] for plugin in config["plugins"] if isinstance(plugin, dict) and "i18n" in plugin)
    words = {"en": config["extra"]["ui"]["verified_with"]}
    for language in i18n["languages"]:
        ui = language.get("extra", {}).get("ui", {})
        if "verified_with" in ui:
            words[language["locale"]] = ui["verified_with"]
    return words


def test_every_footer_names_the_versions_the_examples_were_verified_with(site: Path) -> None:
    """hooks/versions.py and overrides/partials/copyright.html: every page, in both languages, names exactly
    the attention_lib and PyTorch installed where the suite runs the examples and builds the site, the package
    linked to its release on PyPI; Material's own line stays."""
    package, torch = importlib.metadata.version("attention_lib"), importlib.metadata.version("torch")
    link = f'<a href="https://pypi.org/project/attention_lib/{package}/" class="md-copyright__version">'
    names = {"attention_lib": f"{link}attention_lib {package}</a>"}
    names["torch"] = f'<span class="md-copyright__version">PyTorch {torch}</span>'
    words = _verified_with_words()
    assert words.keys() == {"en", "zh"}
    assert HAN.search(words["zh"])
    expected = {lang: text.format(**names) for lang, text in words.items()}
    pages = [path for path in sorted(site.rglob("*.html")) if "assets" not in path.relative_to(site).parts]
    notebooks = list((ROOT / "docs" / "en" / "notebooks").glob("*.ipynb"))
    assert len(pages) == 2 * (len(PAGES) + len(notebooks)) + 1  # both languages, and the 404 page
    wrong = []
    for path in pages:
        html = path.read_text(encoding="utf-8")
        lang = re.search(r'<html[^>]*\blang="(\w+)', html).group(1)
        footer = html.split('<div class="md-copyright">', 1)[1].split("</footer>", 1)[0]
        shown = re.findall(r'<div class="md-copyright__verified">\s*(.*?)\s*</div>', footer, re.DOTALL)
        if shown != [expected[lang]] or "Material for MkDocs" not in footer:
            wrong.append(f"{path.relative_to(site)} (lang={lang}): {shown}")
    assert not wrong, "\n".join(wrong[:10])


def test_the_404_page_is_english_and_leads_every_language_home(site: Path) -> None:
    """GitHub Pages serves one 404 page for every address: the default language's, with a heading, a
    sentence and a link home in each language; its language menu leads to each language's home page."""
    html = (site / "404.html").read_text(encoding="utf-8")
    assert re.search(r'<html[^>]*\blang="en"', html)
    assert "<h1>Page not found</h1>" in html
    menu = re.findall(r'<a href="([^"]*)" hreflang="(\w+)" class="md-select__link"', html)
    assert menu == [(BASE_PATH, "en"), (BASE_PATH + "zh/", "zh")], "the language menu must lead home"
    alternates = re.findall(r'<link rel="alternate" href="([^"]*)" hreflang="(\w+)"', html)
    assert alternates == [(BASE_PATH, "en"), (BASE_PATH + "zh/", "zh")]
    chinese = re.search(r'<section class="not-found" lang="zh">(.*?)</section>', html, re.DOTALL)
    assert chinese, "a part of the page in Chinese, marked lang=zh"
    assert "<h2>页面不存在</h2>" in chinese.group(1)
    assert re.search(rf'<a href="{BASE_PATH}zh/" hreflang="zh">前往中文首页</a>', chinese.group(1))
    assert not (site / "zh" / "404.html").exists()


def test_mkdocs_serve_from_the_virtual_environment_serves_the_site(notebook_cache, tmp_path: Path) -> None:
    """`mkdocs serve`, MkDocs' own command in the activated .venv, run from another folder: its hooks import the
    site's tooling as installed there (docs_tools/pyproject.toml), so it starts and serves both languages.
    (`mkdocs build`, the same command's other half, builds the site that every test here reads.)"""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    notebook_cache(tmp_path)  # or this serve renders every notebook again
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mkdocs = Path(sys.executable).with_name("mkdocs" + (".exe" if os.name == "nt" else ""))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | {"NO_MKDOCS_2_WARNING": "1"}
    command = [str(mkdocs), "serve", "-f", str(ROOT / "mkdocs.yml"), "-a", f"127.0.0.1:{port}", "--no-livereload"]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            pages = {}
            deadline = time.monotonic() + 300  # a whole build first, on a loaded 2-core machine
            while len(pages) < 2 and server.poll() is None and time.monotonic() < deadline:
                for path in ("", "zh/masks/"):
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/attention-docs/{path}") as response:
                            pages[path] = response.read().decode("utf-8")
                    except OSError:
                        time.sleep(0.5)
        finally:
            server.terminate()
            server.wait(timeout=30)
    said = log.read_text(encoding="utf-8", errors="replace")
    assert "ModuleNotFoundError" not in said, said
    assert set(pages) == {"", "zh/masks/"}, said
    assert '<html lang="en"' in pages[""]
    assert '<html lang="zh"' in pages["zh/masks/"]


def _nav_pages(items: list) -> list[str]:
    """The pages of mkdocs.yml's navigation, in order."""
    found: list[str] = []
    for item in items:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        found += _nav_pages(value) if isinstance(value, list) else [value]
    return found


@pytest.mark.parametrize("lang", site_config.complete_locales())
def test_every_page_ends_with_the_way_on_to_the_next(site: Path, lang: str) -> None:
    """A chapter does not end at its last exercise: its foot links the next page of the navigation, in the
    page's language (the review of 2026-11-26 found four chapters that never linked the next one)."""
    order = [page for page in _nav_pages(site_config.config()["nav"]) if page.endswith((".md", ".ipynb"))]
    words = {"en": "Next: ", "zh": "下一页: "}
    for page, following in itertools.pairwise(order):
        text = (site / site_config.url(lang, page) / "index.html").read_text(encoding="utf-8")
        found = re.search(r'<a href="([^"]+)" class="md-footer__link md-footer__link--next" aria-label="([^"]+)"', text)
        assert found, f"{lang}/{page} has no link to the next page"
        target = (site / site_config.url(lang, page) / found[1]).resolve()
        assert target == (site / site_config.url(lang, following)).resolve(), (page, found[1], following)
        assert found[2].startswith(words[lang]), (page, found[2])
