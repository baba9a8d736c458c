"""The interactive pieces: a page asks for one with a line of its own, the same in every language,

    <div data-attention-explorer="masks"></div>      (a name of docs_tools/data/explorers.json)
    <div data-stride-tracer="heads"></div>

and this hook gives the element what its script needs (the explorer's numbers; the words of the page's
language, ``extra.interactive`` in mkdocs.yml) and loads the script right after it, without ``defer``: the
piece is drawn before the browser has laid out anything below it, so nothing moves once the page shows.
Only those pages load the scripts and ``interactive.css`` (overrides/main.html); the notebooks leave the
line out (docs_tools/notebooks.py) and keep the page's figures.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from docs_tools.pages import INTERACTIVE

SCRIPTS = {"attention-explorer": "assets/javascripts/explorer.js", "stride-tracer": "assets/javascripts/tracer.js"}
CSS = "assets/stylesheets/interactive.css"
DATA = Path(__file__).resolve().parent.parent / "docs_tools" / "data" / "explorers.json"


def _attribute(value: object) -> str:
    return escape(json.dumps(value, ensure_ascii=False, separators=(",", ":")), quote=True)


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    words = config.extra["interactive"]  # the page's language's (mkdocs-static-i18n sets extra per language)
    explorers = None

    def expand(match: re.Match[str]) -> str:
        nonlocal explorers
        kind, name = match["kind"], match["name"]
        attributes = f'data-{kind}="{name}"'
        if kind == "attention-explorer":
            if explorers is None:
                explorers = json.loads(DATA.read_text(encoding="utf-8"))
            if name not in explorers:
                raise PluginError(f"{page.file.src_uri}: no explorer named {name!r} in {DATA.name}")
            attributes += f' data-config="{_attribute(explorers[name])}"'
        attributes += f' data-strings="{_attribute(words[kind])}"'
        script = get_relative_url(SCRIPTS[kind], page.url)
        return f'<div class="{kind}" {attributes}></div>\n<script src="{script}"></script>'

    html, count = INTERACTIVE.subn(expand, html)
    if count:
        # overrides/main.html links it in the head; MkDocs' Page declares no such field, hence vars().
        vars(page)["interactive_css"] = CSS
    return html
