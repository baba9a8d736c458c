"""Library code on the pages: a line ``--8<-- "attention_lib/<file>.py:<Name>"`` in a ```` ```python ````
block shows that section of the library file (between ``# --8<-- [start:<Name>]`` and
``# --8<-- [end:<Name>]``), dedented, and without its docstrings, which the API reference shows.

pymdownx.snippets, which included these sections before, shows a section verbatim, docstrings with their
cross-reference markup included; leaving them out needs the file's syntax tree, so this hook expands the
include lines itself, with the same function the code-width and copy-button tests use
(``docs_tools.pages.library_section``). A missing file or section fails the build, naming the page.
"""

from __future__ import annotations

import re

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from docs_tools.pages import library_code
from docs_tools.project import ROOT

INCLUDE_LINE = re.compile(r'^(?P<indent>[ \t]*)--8<-- "[^"\n]*"[ \t]*$', re.MULTILINE)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    def shown(match: re.Match[str]) -> str:
        try:
            code = library_code(match[0], ROOT)
        except ValueError as error:
            raise PluginError(f"{page.file.src_uri}: {error}") from None
        indent = match["indent"]
        return "\n".join(indent + line if line else "" for line in code.split("\n"))

    return INCLUDE_LINE.sub(shown, markdown)
