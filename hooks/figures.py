"""The figures' sizes: each ``<img class="attention-figure">`` gets the width and height of its SVG, so that the
browser keeps the figure's room from the start. Without them an image takes no height until it has loaded, and
everything below it moves down when it arrives: by the whole figure (up to 779 px, measured on the masks-beyond-causal
page with a slow SVG), under a reader who is already reading, or who arrived by a link to a section further down.
extra.css keeps the figure within the page (``max-width: 100%; height: auto``), at the SVG's aspect ratio.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

FIGURES = Path(__file__).resolve().parent.parent / "docs" / "assets" / "figures"
IMAGE = re.compile(r'<img (?P<attributes>[^>]*\bclass="attention-figure"[^>]*?)\s*/?>')
SOURCE = re.compile(r'\bsrc="(?:[^"]*/)?assets/figures/(?P<name>[\w.-]+\.svg)(?:#[\w-]*)?"')
#: The root element's own size, which the figure generators always write (docs_tools/figures/_svg.py).
SIZE = re.compile(r'<svg\b[^>]*?\bwidth="(?P<width>[\d.]+)"[^>]*?\bheight="(?P<height>[\d.]+)"')


def _sized(match: re.Match[str], page: Page, sizes: dict[str, tuple[str, str]]) -> str:
    attributes = match["attributes"]
    source = SOURCE.search(attributes)
    if source is None or " width=" in f" {attributes}":
        return match[0]
    name = source["name"]
    if name not in sizes:
        size = SIZE.search((FIGURES / name).read_text(encoding="utf-8")) if (FIGURES / name).is_file() else None
        if size is None:
            raise PluginError(f"{page.file.src_uri}: the figure {name} has no width and height of its own")
        sizes[name] = (size["width"], size["height"])
    width, height = sizes[name]
    return f'<img {attributes} width="{width}" height="{height}" />'


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    sizes: dict[str, tuple[str, str]] = {}
    return IMAGE.sub(lambda match: _sized(match, page, sizes), html)
