"""Search with Pagefind: one index per language, loaded only when a reader opens the search dialog.

Material's own search downloads its whole index (both languages, about 1.5 MB) on every page view and
drops the last character of every Chinese query. Pagefind (``pagefind[extended]`` on PyPI, which ships
the indexer with Chinese segmentation) builds one index per ``<html lang>`` after the site is written,
split into chunks the browser fetches only for the words a reader types.

What is indexed: the chapter pages, the home page, the glossary and the API reference, in each language.
Not indexed: the notebooks (each is generated from its chapter page, so it would only repeat the chapter
under the same title), the translation status table and the 404 page; on every page, the header, the
sidebars, the footer, heading anchors, translation banners and output blocks (long runs of numbers), but for
an output block's exception line: an error a reader pastes into the search box finds the section that shows
it (``RuntimeError: view size is not compatible ...``), while the numbers stay out.

Material's ``search`` plugin stays enabled only because its header template shows the search button
when it is; ``overrides/partials/search.html`` replaces Material's search box with the Pagefind dialog
(and has no ``<form name="search">``, so Material's scripts never fetch their own index). The plugin's
work is switched off here: it would parse every page into a lunr index that nothing loads.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from html import escape, unescape
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs_static_i18n.plugin import I18n

#: Pages not indexed, as paths relative to the site (prefixes, in every language).
NOT_INDEXED = ("notebooks/", "translation-status/", "404.html", "assets/")
#: Pages that mention every topic in passing (the home page, the glossary, the API reference): their text
#: counts for less, so that a word finds the chapter that teaches it first. Paths within a language.
REFERENCE = {"index.html": 0.3, "glossary/index.html": 0.5, "api/index.html": 0.3}
#: Parts of every page that are not its content.
NOT_CONTENT = [
    ".md-header",
    ".md-tabs",
    ".md-sidebar",
    ".md-footer",
    ".md-skip",
    ".md-top",
    ".katex-mathml",  # the formula's MathML repeats it, with its TeX source
    ".md-content__button",
    ".headerlink",
    ".translation-banner",
    ".language-output",
    'img[src$="#only-dark"]',  # a figure's dark twin: the same alt text as the light one, counted once
]


def indexed_pages(site: Path, languages: list[str]) -> dict[str, str]:
    """The built pages that search finds, in every language (``languages``: the locale prefixes): each
    page's path in the site (``zh/masks/index.html``) and within its language (``masks/index.html``)."""
    pages = {}
    for path in sorted(site.rglob("*.html")):
        relative = path.relative_to(site).as_posix()
        language, _, rest = relative.partition("/")
        within = rest if language in languages and rest else relative
        if not within.startswith(NOT_INDEXED):
            pages[relative] = within
    return pages


#: A Chinese character (CJK Unified Ideographs and Extension A), and a tag or a run of text between tags.
HAN = "\u3400-\u4dbf\u4e00-\u9fff"
BETWEEN_HAN = re.compile(f"(?<=[{HAN}])(?=[{HAN}])")
TAG_OR_TEXT = re.compile(r"(<[^>]*>)|([^<]+)")
#: The dot of a qualified name (F.scaled_dot_product_attention, nn.Linear): Pagefind would index the two
#: names as one word ("fscaled_dot_product_attention"), so a reader typing the function's name found only
#: the pages that write it without its module. search.js splits a query the same way.
QUALIFIED = re.compile(r"(?<=\w)\.(?=[A-Za-z_])")


#: An output block, as pymdownx.highlight writes it (``.language-output``, not indexed), and the exception line
#: that ends one when its code raises (CONTRIBUTING.md): ``ValueError: ...``, ``torch.OutOfMemoryError: ...``.
#: A message may go on over the block's next lines; its end may be cut short with `` ...``.
OUTPUT_BLOCK = re.compile(r'<div class="language-output[^"]*"[^>]*>.*?</pre></div>', re.DOTALL)
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning): ", re.MULTILINE)
TAG = re.compile(r"<[^>]*>")


def _with_errors_indexed(html: str) -> str:
    """``html`` with the exception line of every output block that ends in one copied, as text, right after the
    block: in the same section, outside ``.language-output``, so that Pagefind indexes it and nothing else of
    the block."""

    def error(match: re.Match[str]) -> str:
        text = unescape(TAG.sub("", match[0]))
        starts = list(EXCEPTION_LINE.finditer(text))
        if not starts:
            return match[0]
        message = " ".join(text[starts[-1].start() :].split()).removesuffix(" ...")
        return f'{match[0]}<p class="indexed-error">{escape(message)}</p>'

    return OUTPUT_BLOCK.sub(error, html)


#: A chapter's last section, its exercises (CONTRIBUTING.md), to the end of the page's text: what it asks and
#: names (each task's contract, the library calls it rules out) counts for less than the teaching above it,
#: so that a word finds the section that teaches it before an exercise that uses it.
EXERCISES_SECTION = re.compile(r'(<h2 id="exercises".*?)(</article>)', re.DOTALL)
EXERCISES_WEIGHT = 0.5


def _exercises_weighted(html: str) -> str:
    return EXERCISES_SECTION.sub(rf'<div data-pagefind-weight="{EXERCISES_WEIGHT}">\1</div>\2', html, count=1)


def indexed_text(html: str, weight: float = 1.0) -> str:
    """The copy of a page that Pagefind indexes: every Chinese character a word of its own.

    Chinese has no spaces between words, and Pagefind 1.5 cuts it into words with one segmenter when
    indexing and with the browser's (Intl.Segmenter) when searching; the two disagree on the words this
    site teaches (the browser cuts 转置 and 掩码 into single characters), so a query often matched nothing
    or the wrong page. Here the index holds single characters; ``search.js`` looks a Chinese query up by
    its characters and keeps the pages where they stand together as typed, and shows the text without
    the spaces. The page itself is served unchanged. ``weight`` scales the page's text (``REFERENCE``). The
    exception lines of the output blocks are in it, as text after each block (``_with_errors_indexed``).
    """
    html = _with_errors_indexed(html)
    html = _exercises_weighted(html)
    html = TAG_OR_TEXT.sub(lambda m: m[1] or QUALIFIED.sub(" ", BETWEEN_HAN.sub(" ", m[2])), html)
    if weight != 1.0:
        # Pagefind's own ranking (English) reads the weight; search.js's (Chinese) reads the meta field.
        weighted = f'<article data-pagefind-weight="{weight}" data-pagefind-meta="weight:{weight}" class='
        html = html.replace('<article class="md-content__inner', weighted + '"md-content__inner', 1)
    return html


def _index(site: Path, pages: dict[str, str]) -> None:
    """Index ``pages`` (as ``indexed_pages`` gives them) into ``site/pagefind``.

    Pagefind's command line reads the pages' indexed copies from a folder of their own: its Python API
    waits a tenth of a second for each answer of the indexer (3.3 s for this site's 32 pages, 0.4 s with
    the command line, which writes the same pages and words)."""
    with tempfile.TemporaryDirectory() as copies:
        for relative, within in pages.items():
            copy = Path(copies, relative)
            copy.parent.mkdir(parents=True, exist_ok=True)
            html = indexed_text((site / relative).read_text(encoding="utf-8"), REFERENCE.get(within, 1.0))
            copy.write_text(html, encoding="utf-8")
        command = [sys.executable, "-m", "pagefind", "--site", copies, "--output-path", str(site / "pagefind")]
        for selector in NOT_CONTENT:
            command += ["--exclude-selectors", selector]
        result = subprocess.run([*command, "--quiet"], capture_output=True, text=True)
    if result.returncode != 0:
        raise PluginError(f"search: Pagefind failed:\n{result.stdout}{result.stderr}")
    # Pagefind leaves out a page with no words outside NOT_CONTENT: every page must be in.
    entry = json.loads((site / "pagefind" / "pagefind-entry.json").read_text(encoding="utf-8"))
    indexed = {language: info["page_count"] for language, info in entry["languages"].items()}
    if sum(indexed.values()) != len(pages):
        raise PluginError(
            f"search: Pagefind indexed {sum(indexed.values())} of the {len(pages)} pages ({indexed}): a page has "
            f"no words outside NOT_CONTENT (hooks/search.py); the pages: {', '.join(pages)}"
        )


def on_config(config: MkDocsConfig) -> None:
    # Unhook Material's search plugin from the events where it builds and writes its lunr index (about 3 s
    # of every build): it stays in config.plugins, enabled, which is all its header template asks.
    search = config.plugins["material/search"]
    for event in ("page_context", "post_build"):
        handlers = config.plugins.events[event]
        handlers[:] = [handler for handler in handlers if getattr(handler, "__self__", None) is not search]


@event_priority(-100)  # after every plugin has written its files
def on_post_build(config: MkDocsConfig) -> None:
    i18n: I18n = config.plugins["i18n"]
    if i18n.building:
        # mkdocs-static-i18n builds the other languages from within the first language's post_build, and
        # each of those builds ends here too: the site is indexed once, when the last of them has returned
        # (indexing it each time cost a build about 3.6 s).
        return
    site = Path(config.site_dir)
    # mkdocs-static-i18n still has Material's plugin write its (empty) lunr index once all languages are
    # built, by calling the plugin directly: nothing loads it.
    shutil.rmtree(site / "search", ignore_errors=True)
    languages = [language.locale for language in config.plugins["i18n"].config.languages]
    pages = indexed_pages(site, languages)
    if not pages:
        raise PluginError(f"search: no page to index under {site}")
    _index(site, pages)
