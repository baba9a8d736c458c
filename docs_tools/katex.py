"""Typesetting formulas with KaTeX at build time: KaTeX's own ``katex.min.js``, compiled once in V8 (mini-racer),
turns every arithmatex element of a page's HTML into KaTeX's HTML and MathML. ``hooks/math.py`` calls it for
every page with math.
"""

from __future__ import annotations

import html as html_module
import json
import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from py_mini_racer import MiniRacer

# Under mkdocs' logger, so that `mkdocs build --strict` fails on KaTeX's warnings.
log = logging.getLogger("mkdocs.hooks.math")

#: What the build runs, relative to the project root: the copy npm installs from package-lock.json.
KATEX_JS = Path("node_modules/katex/dist/katex.min.js")
#: An arithmatex element, as pymdownx.arithmatex writes it and as on_config has nbconvert write it.
FORMULA = re.compile(r'<(?P<tag>span|div) class="arithmatex">(?P<tex>.*?)</(?P=tag)>', re.DOTALL)
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
