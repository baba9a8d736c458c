"""Typeset every formula at build time with KaTeX, so a page shows its math without any script.

* Chapter pages: pymdownx.arithmatex (``generic: true``) leaves ``\\( … \\)`` in ``<span class="arithmatex">``
  and ``\\[ … \\]`` in ``<div class="arithmatex">``.
* Notebook pages: nbconvert renders their Markdown cells for mkdocs-jupyter and keeps each formula its
  Markdown parser found (``$ … $``, ``$$ … $$``, ``\\begin{…} … \\end{…}``) as text. ``on_config`` has it wrap
  them the way arithmatex does instead, so code spans and code blocks are never taken for math, and both
  kinds of page are typeset by the same code below.

``on_post_page`` replaces each of them with KaTeX's HTML and MathML (``output: "htmlAndMathml"``, so screen
readers get the formula), computed by the pinned ``katex.min.js`` that npm installs under ``node_modules/``
(``python3 dev.py docs``), run in V8 through mini-racer: no Node.js at build time. One V8 context, with
KaTeX compiled once, serves the whole build, both languages included. A formula KaTeX cannot parse fails
the build, naming the page and the formula; one it parses with a warning (KaTeX's ``strict`` checks, e.g.
Chinese characters outside ``\\text{}``) is logged as a warning, which ``mkdocs build --strict`` fails on.

A page with math gets ``page.math_css``, the KaTeX stylesheet that overrides/main.html links on that page
only (its fonts, woff2 only, come with it from dev.py); pages without math load no math CSS or script, and
notebook pages lose the MathJax scripts mkdocs-jupyter's template adds.
"""

from __future__ import annotations

import html as html_module
import json
import logging
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from nbconvert.filters.markdown_mistune import IPythonRenderer
from py_mini_racer import MiniRacer

log = logging.getLogger("mkdocs.hooks.math")

#: What the build runs, relative to the project root: the copy npm installs from package-lock.json.
KATEX_JS = Path("node_modules/katex/dist/katex.min.js")
#: What a page with math links, relative to docs/ (dev.py copies it there from the same npm package).
KATEX_CSS = "assets/vendor/katex/katex.min.css"
#: An arithmatex element, as pymdownx.arithmatex writes it and as on_config has nbconvert write it.
FORMULA = re.compile(r'<(?P<tag>span|div) class="arithmatex">(?P<tex>.*?)</(?P=tag)>', re.DOTALL)
#: What mkdocs-jupyter's template puts on every notebook page for MathJax: a script tag for
#: ``custom_mathjax_url`` (an empty ``data:`` script, see mkdocs.yml) and an inline configuration script.
MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)

# Renders a JSON list of [tex, displayMode] pairs in one call; returns, for each, its HTML and KaTeX's
# warnings, or KaTeX's parse error.
RENDER_ALL = """
globalThis.renderFormulas = (formulas) => JSON.stringify(JSON.parse(formulas).map(([tex, displayMode]) => {
  const warnings = [];
  const strict = (code, message) => { warnings.push(message); return "ignore"; };
  try {
    const options = {displayMode, output: "htmlAndMathml", throwOnError: true, strict};
    return {html: katex.renderToString(tex, options), warnings};
  } catch (error) {
    if (error instanceof katex.ParseError) return {error: error.message};
    throw error;
  }
}));
"""


class KaTeXError(ValueError):
    """A formula KaTeX cannot parse."""

    def __init__(self, tex: str, message: str) -> None:
        super().__init__(f"KaTeX cannot typeset the formula {tex!r}: {message}")
        self.tex = tex


class KaTeX:
    """KaTeX's own ``katex.min.js``, compiled once in a V8 context."""

    def __init__(self, script: Path) -> None:
        if not script.is_file():
            raise PluginError(f"{script} is missing: run `python3 dev.py docs`, which installs KaTeX from npm")
        self._v8 = MiniRacer()
        self._v8.eval(script.read_text(encoding="utf-8"))
        self._v8.eval(RENDER_ALL)

    def render(self, formulas: list[tuple[str, bool]]) -> list[tuple[str, list[str]]]:
        """KaTeX's HTML and warnings for each ``(tex, display)``; KaTeXError for the first it cannot parse."""
        results = json.loads(self._v8.call("renderFormulas", json.dumps(formulas)))
        for (tex, _), result in zip(formulas, results, strict=True):
            if "error" in result:
                raise KaTeXError(tex, result["error"])
        return [(result["html"], result["warnings"]) for result in results]

    def close(self) -> None:
        # Explicitly: a context still open when Python exits can hang the interpreter's shutdown.
        self._v8.close()


def _split(element: str, source: str) -> tuple[str, bool]:
    """The TeX of an arithmatex element's HTML-escaped text, and whether it is display math."""
    text = html_module.unescape(source).strip()
    if text.startswith("\\(") and text.endswith("\\)"):
        return text[2:-2], False
    if text.startswith("\\[") and text.endswith("\\]"):
        return text[2:-2], True
    if text.startswith("\\begin{"):
        return text, True
    raise PluginError(f"{element}: an arithmatex element holds no delimited formula: {text!r}")


def typeset(html: str, katex: KaTeX, where: str) -> tuple[str, int]:
    """``html`` with every arithmatex element's formula typeset, and how many there were.

    ``where`` (the page) names the page in the error raised for a formula KaTeX cannot parse, and in the
    warnings logged for one it parses with a warning.
    """
    matches = list(FORMULA.finditer(html))
    if not matches:
        return html, 0
    formulas = [_split(where, match["tex"]) for match in matches]
    try:
        rendered = katex.render(formulas)
    except KaTeXError as error:
        raise PluginError(f"{where}: {error}") from None
    for (tex, _), (_, warnings) in zip(formulas, rendered, strict=True):
        for warning in warnings:
            log.warning("%s: KaTeX warns about the formula %r: %s", where, tex, warning)
    pieces = iter(
        f'<{match["tag"]} class="arithmatex">{output}</{match["tag"]}>'
        for match, (output, _) in zip(matches, rendered, strict=True)
    )
    return FORMULA.sub(lambda _: next(pieces), html), len(matches)


# ---------------------------------------------------------------------------------------------------
# The hook's events
# ---------------------------------------------------------------------------------------------------
_katex: KaTeX | None = None
# mkdocs-static-i18n builds each other language inside the first build's on_post_build, so builds nest;
# the V8 context lives until the outermost one ends.
_depth = 0


def on_config(config: MkDocsConfig) -> None:
    # nbconvert's renderer for the notebooks' Markdown cells (the class mkdocs-jupyter also patches, for
    # heading ids): each formula its parser found becomes an arithmatex element, its TeX escaped as arithmatex
    # escapes it. Display math stays a <span>: nbconvert puts it inside a paragraph.
    IPythonRenderer.inline_math = lambda self, body: f'<span class="arithmatex">\\({self.escape_html(body)}\\)</span>'
    IPythonRenderer.block_math = lambda self, body: f'<span class="arithmatex">\\[{self.escape_html(body)}\\]</span>'
    IPythonRenderer.latex_environment = lambda self, name, body: (
        f'<span class="arithmatex">\\begin{{{self.escape_html(name)}}}{self.escape_html(body)}'
        f"\\end{{{self.escape_html(name)}}}</span>"
    )


def on_pre_build(config: MkDocsConfig) -> None:
    global _depth
    _depth += 1


# After the other hooks (default priority 0): hooks/notebooks_after_i18n.py renames a notebook's headings by
# matching the HTML nbconvert wrote, which it then still sees unchanged.
@event_priority(-50)
def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Mark a page with formulas for KaTeX's stylesheet, and drop the MathJax scripts of a notebook page."""
    html = MATHJAX.sub("", html)  # the formulas are typeset already: no page loads a math script
    if FORMULA.search(html):
        if files.get_file_from_path(KATEX_CSS) is None:
            raise PluginError(f"docs/{KATEX_CSS} is missing: run `python3 dev.py docs`, which installs KaTeX from npm")
        page.math_css = KATEX_CSS
    return html


def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Typeset the page's formulas: in the finished page, after the search plugin has indexed its content, so
    the index keeps each formula's TeX. KaTeX's HTML and MathML text would add 24 KB to the index every page
    downloads, and about 4 s of CPU to the build in the search plugin's HTML parser."""
    global _katex
    if not getattr(page, "math_css", None):
        return output
    if _katex is None:
        _katex = KaTeX(Path(config.config_file_path).parent / KATEX_JS)
    return typeset(output, _katex, page.file.src_uri)[0]


def _close() -> None:
    global _katex, _depth
    if _katex is not None:
        _katex.close()
    _katex, _depth = None, 0


@event_priority(-200)  # after mkdocs-static-i18n's on_post_build (-100), which builds the other languages
def on_post_build(config: MkDocsConfig) -> None:
    global _depth
    _depth -= 1
    if _depth == 0:
        _close()


def on_build_error(error: Exception) -> None:
    _close()
