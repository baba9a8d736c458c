"""Library code on the pages: a line ``--8<-- "attention_lib/<file>.py:<Name>"`` in a ```` ```python ````
block shows that section of the library file (between ``# --8<-- [start:<Name>]`` and
``# --8<-- [end:<Name>]``), dedented, and without its docstrings, which the API reference shows.

pymdownx.snippets, which included these sections before, shows a section verbatim, docstrings with their
cross-reference markup included; leaving them out needs the file's syntax tree, so this hook expands the
include lines itself, with the same function the code-width and copy-button tests use
(``docs_tools.pages.library_section``). A missing file or section fails the build, naming the page.

Such a block is there to read, not to paste: the page imports the class or function from ``attention_lib``,
and the source pasted into the same session would replace the import with a copy that lacks the library's
own imports (``check_positive_int``, ``nn``), so every later block that uses it fails. So the built block is
marked as library source and has no copy button (Material leaves it out of a block of class ``no-copy``):
its title, Material's code block title, is the file's path, linked to those lines of the file in the
repository, and a note in the page's language (``extra.library_source`` in ``mkdocs.yml``) to import it
rather than paste it. The page itself keeps the plain ```` ```python ```` fence that Sybil reads (and skips,
with its ``skip: next`` directive): a title on a fence a writer types would hide a runnable block from Sybil,
which ``tests/pages/test_docs.py`` forbids, so the title is added here, at build time, and only to a block
whose one line is an include.
"""

from __future__ import annotations

import html
import re

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from docs_tools.pages import library_code, library_section
from docs_tools.project import ROOT

INCLUDE_LINE = re.compile(r'^(?P<indent>[ \t]*)--8<-- "[^"\n]*"[ \t]*$', re.MULTILINE)
#: A block of library source: a ```python fence whose only line is an include, indented alike (in an admonition).
LIBRARY_BLOCK = re.compile(
    r'^(?P<indent>[ \t]*)```python[ \t]*\n(?P=indent)(?P<include>--8<-- "[^"\n]*")[ \t]*\n(?P=indent)```[ \t]*$',
    re.MULTILINE,
)
#: The class that marks the built block (extra.css, the browser test), and the attribute with the file's lines.
CLASS = "library-source"
#: The start of a built library block, as pymdownx.highlight writes it: its <div> and the title it gave it.
BUILT_TITLE = re.compile(
    rf'(?P<div><div class="[^"]*\b{CLASS}\b[^"]*"[^>]*\bdata-library-lines="(?P<first>\d+)-(?P<last>\d+)"[^>]*>)'
    r'<span class="filename">(?P<path>[^<]*)</span>'
)
BUILT_BLOCK = re.compile(rf'<div class="[^"]*\b{CLASS}\b')


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    def shown(match: re.Match[str]) -> str:
        try:
            path, numbered = library_section(match["include"], ROOT)
            code = library_code(match["include"], ROOT)
        except ValueError as error:
            raise PluginError(f"{page.file.src_uri}: {error}") from None
        # The lines shown, for the link: the first and the last that hold code.
        numbers = [number for number, text in numbered if text.strip()]
        fence = (
            f'``` {{ .python .no-copy .{CLASS} title="{path.relative_to(ROOT).as_posix()}" '
            f'data-library-lines="{numbers[0]}-{numbers[-1]}" }}'
        )
        indent = match["indent"]
        lines = [fence, *code.split("\n"), "```"]
        return "\n".join(indent + line if line else "" for line in lines)

    markdown = LIBRARY_BLOCK.sub(shown, markdown)
    stray = INCLUDE_LINE.search(markdown)
    if stray is not None:
        line = markdown.count("\n", 0, stray.start()) + 1
        raise PluginError(
            f"{page.file.src_uri}:{line}: {stray[0].strip()} must be the only line of its ```python block, so that"
            " the block shows the library's source and nothing else"
        )
    return markdown


def on_page_content(content: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Each library block's title: the file's path, linked to the lines shown, and the note to import it."""
    words = config.extra["library_source"]
    blob = config.extra["repository"].rstrip("/") + "/blob/main/"

    def titled(match: re.Match[str]) -> str:
        path, first, last = html.unescape(match["path"]), match["first"], match["last"]
        link_title = words["link_title"].format(path=path, first=first, last=last)
        return (
            f'{match["div"]}<span class="filename">'
            f'<a href="{html.escape(blob + path)}#L{first}-L{last}" title="{html.escape(link_title)}">'
            f"{html.escape(path)}</a> "
            f'<span class="{CLASS}__note">{html.escape(words["note"])}</span></span>'
        )

    content, titles = BUILT_TITLE.subn(titled, content)
    blocks = len(BUILT_BLOCK.findall(content))
    if titles != blocks:
        raise PluginError(
            f"{page.file.src_uri}: {blocks} blocks of library source, but {titles} of them with the title this hook"
            " gave them: pymdownx.highlight writes a block's title otherwise than this hook reads it"
        )
    return content
