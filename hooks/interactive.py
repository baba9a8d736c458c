"""The interactive pieces: a page asks for one with a line of its own, the same in every language,

    <div data-attention-explorer="masks"></div>      (a name of docs_tools/data/explorers.json)
    <div data-stride-tracer="heads"></div>
    <div data-decode-stepper="NAME"></div>          (docs_tools/data/decode_stepper.json)
    <div data-mask-composer="masks"></div>
    <div data-tile-stepper="NAME"></div>            (docs_tools/data/tile_stepper.json)

and this hook gives the element what its script needs (its numbers, exported from attention_lib by
``python3 dev.py figures``; the words of the page's language, ``extra.interactive`` in mkdocs.yml) and loads
the script right after it, without ``defer``: the piece is drawn before the browser has laid out anything
below it, so nothing moves once the page shows. Only those pages load the scripts, ``interactive.css`` and
each piece's own stylesheet (overrides/main.html); the notebooks leave the line out (docs_tools/notebooks.py),
link to the piece and keep the page's figures.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from docs_tools.pages import INTERACTIVE

#: The stylesheet every page with a piece links; a piece with a stylesheet of its own links that one too.
CSS = "assets/stylesheets/interactive.css"
DATA_DIR = Path(__file__).resolve().parent.parent / "docs_tools" / "data"


@dataclass(frozen=True)
class Piece:
    """A kind of piece: its script, its own stylesheet (None: interactive.css only), and the JSON file in
    docs_tools/data/ whose entry NAME the element gets as ``data-config`` (None: it starts from no numbers)."""

    script: str
    css: str | None = None
    data: str | None = None


PIECES = {
    "attention-explorer": Piece("assets/javascripts/explorer.js", data="explorers.json"),
    "stride-tracer": Piece("assets/javascripts/tracer.js"),
    "decode-stepper": Piece("assets/javascripts/decode.js", "assets/stylesheets/decode.css", "decode_stepper.json"),
    "mask-composer": Piece("assets/javascripts/composer.js", "assets/stylesheets/composer.css"),
    "tile-stepper": Piece("assets/javascripts/tiles.js", "assets/stylesheets/tiles.css", "tile_stepper.json"),
}


def _attribute(value: object) -> str:
    return escape(json.dumps(value, ensure_ascii=False, separators=(",", ":")), quote=True)


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    words = config.extra["interactive"]  # the page's language's (mkdocs-static-i18n sets extra per language)
    loaded: dict[str, dict[str, object]] = {}
    stylesheets = [CSS]

    def expand(match: re.Match[str]) -> str:
        kind, name = match["kind"], match["name"]
        piece = PIECES[kind]
        attributes = f'data-{kind}="{name}"'
        if piece.data is not None:
            if piece.data not in loaded:
                if not (DATA_DIR / piece.data).is_file():
                    raise PluginError(f"{page.file.src_uri}: no {piece.data}: run python3 dev.py figures")
                loaded[piece.data] = json.loads((DATA_DIR / piece.data).read_text(encoding="utf-8"))
            if name not in loaded[piece.data]:
                raise PluginError(f"{page.file.src_uri}: no {kind} named {name!r} in {piece.data}")
            attributes += f' data-config="{_attribute(loaded[piece.data][name])}"'
        attributes += f' data-strings="{_attribute(words[kind])}"'
        if piece.css is not None and piece.css not in stylesheets:
            stylesheets.append(piece.css)
        script = get_relative_url(piece.script, page.url)
        return f'<div class="{kind}" {attributes}></div>\n<script src="{script}"></script>'

    html, count = INTERACTIVE.subn(expand, html)
    if count:
        # overrides/main.html links them in the head; MkDocs' Page declares no such field, hence vars().
        vars(page)["interactive_css"] = stylesheets
    return html
