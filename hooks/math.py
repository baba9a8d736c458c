"""Typeset every formula at build time with KaTeX, so a page shows its math without any script.

* Chapter pages: pymdownx.arithmatex (``generic: true``) leaves ``\\( … \\)`` in ``<span class="arithmatex">``
  and ``\\[ … \\]`` in ``<div class="arithmatex">``.
* Notebook pages: nbconvert renders their Markdown cells for mkdocs-jupyter and keeps each formula its
  Markdown parser found (``$ … $``, ``$$ … $$``, ``\\begin{…} … \\end{…}``) as text. ``on_config`` has it wrap
  them the way arithmatex does instead, so code spans and code blocks are never taken for math, and both
  kinds of page are typeset by the same code (``docs_tools/katex.py``).

``on_post_page`` replaces each of them with KaTeX's HTML and MathML (``output: "htmlAndMathml"``, so screen
readers get the formula), computed by the pinned ``katex.min.js`` that npm installs under ``node_modules/``
(``python3 dev.py docs``), run in V8 through mini-racer (``docs_tools/katex.py``): no Node.js at build time.
One V8 context, with KaTeX compiled once, serves the whole build, both languages included. A formula KaTeX
cannot parse fails the build, naming the page and the formula; one it parses with a warning (KaTeX's
``strict`` checks, e.g. Chinese characters outside ``\\text{}``) is logged as a warning, which
``mkdocs build --strict`` fails on.

A page with math gets ``page.math_css``, the KaTeX stylesheet that overrides/main.html links on that page
only (its fonts, woff2 only, come with it from dev.py); pages without math load no math CSS or script, and
notebook pages lose the MathJax scripts mkdocs-jupyter's template adds.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from nbconvert.filters.markdown_mistune import IPythonRenderer

from docs_tools.katex import FORMULA, KATEX_JS, KaTeX, typeset

#: What a page with math links, relative to docs/ (dev.py copies it there from the same npm package).
KATEX_CSS = "assets/vendor/katex/katex.min.css"
#: What mkdocs-jupyter's template puts on every notebook page for MathJax: a script tag for
#: ``custom_mathjax_url`` (an empty ``data:`` script, see mkdocs.yml) and an inline configuration script.
MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)


_katex: KaTeX | None = None
# mkdocs-static-i18n builds each other language inside the first build's on_post_build, so builds nest;
# the V8 context lives until the outermost one ends.
_depth = 0


def on_config(config: MkDocsConfig) -> None:
    # nbconvert's renderer for the notebooks' Markdown cells (the class mkdocs-jupyter also patches, for
    # heading ids): each formula its parser found becomes an arithmatex element, its TeX escaped as arithmatex
    # escapes it. Display math stays a <span>: nbconvert puts it inside a paragraph. Replacing a class's methods
    # is what mypy's method-assign flags; each replacement is still checked against nbconvert's signature.
    IPythonRenderer.inline_math = lambda self, body: f'<span class="arithmatex">\\({self.escape_html(body)}\\)</span>'  # type: ignore[method-assign]
    IPythonRenderer.block_math = lambda self, body: f'<span class="arithmatex">\\[{self.escape_html(body)}\\]</span>'  # type: ignore[method-assign]
    IPythonRenderer.latex_environment = lambda self, name, body: (  # type: ignore[method-assign]
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
        # overrides/main.html links it on this page; MkDocs' Page declares no such field, hence vars().
        vars(page)["math_css"] = KATEX_CSS
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
