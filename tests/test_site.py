"""The site builds with ``mkdocs build --strict`` in both languages and loads nothing from another host."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import translations

ROOT = Path(__file__).resolve().parent.parent
SOURCES = translations.pages()  # the English pages, as paths relative to docs/en
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


def _lunr_tokens(text: str, separator: str) -> set[str]:
    """The terms lunr indexes for ``text``: HTML removed, split on the site's separator, lower case."""
    text = re.sub(r"<[^>]+>", " ", text)
    return {token.lower() for token in re.split(separator, text) if token}


def test_chinese_search_finds_a_word_from_the_middle_of_a_sentence(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    separator = index["config"]["separator"]
    assert "\\u200b" in separator, "jieba joins Chinese words with U+200B; the separator must split on it"
    # "混合" sits in the middle of a sentence on the Chinese home page.
    sentence = "就是按这些权重把六个输入向量混合起来的结果"
    assert sentence in (ROOT / "docs" / "zh" / "index.md").read_text(encoding="utf-8")
    hits = [doc["location"] for doc in index["docs"] if "混合" in _lunr_tokens(doc["text"], separator)]
    assert "zh/" in hits, hits
    # Without segmentation the whole run of Chinese characters would be one token, and "混合" would match nothing.
    unsegmented = [
        doc["location"] for doc in index["docs"] if "混合" in _lunr_tokens(doc["text"].replace("\u200b", ""), separator)
    ]
    assert unsegmented == []


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
