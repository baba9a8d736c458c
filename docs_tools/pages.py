"""The page model: a page's fenced blocks, the output block shown under each ```` ```python ```` block, and
the page's text without its code. One parser (Sybil's fenced-block lexer), used by the examples the suite
runs (``docs_tools.examples``), the notebook generator, the translation checks and the browser tests.

The conventions, which ``CONTRIBUTING.md`` states for writers:

* A block fenced exactly as ```` ```python ```` runs; all blocks of one page share a namespace, in order.
  Sybil's rule, kept on purpose: ```` ```py ````, ```` ``` python ```` or ```` ```python title="x" ```` do
  not run, so ``tests/pages/test_docs.py`` fails on any such fence.
* An ```` ```output ```` block right after it (only blank lines between) is what the block prints. A
  block with no output block must print nothing. An output block after anything else is an error:
  an output the suite cannot check is never shown.
* If the block raises, the output block ends with the exception line (``ValueError: ...``), optionally
  after a ``Traceback (most recent call last):`` line and ``...``.
* ``<!-- skip: next "reason" -->`` (Sybil's own directive) shows the next block without running it;
  ``tests/pages/test_docs.py`` requires a reason.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from sybil import Document, Region
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

RUN = "python"
OUTPUT = "output"

#: Every fenced block of a page, with its whole info string (what follows the backticks).
FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE))

#: An info string that asks for Python in any spelling: ```py, ``` python, ```python title="x", ```{.python}
PYTHON_LIKE = re.compile(r"^\s*\{?\s*\.?(?:py|python|python3|py3|pycon|ipython)\b", re.IGNORECASE)

TRACEBACK = "Traceback (most recent call last):"


def fenced_blocks(document: Document) -> Iterator[Region]:
    return iter(FENCES(document))


def shown_outputs(document: Document, blocks: list[Region]) -> dict[int, Region]:
    """The output block shown under each ```` ```python ```` block, keyed by the code block's start.

    An output block belongs to the code block right above it, with only blank lines between.
    """
    return {
        block.start: following
        for block, following in itertools.pairwise(blocks)
        if block.lexemes["info"] == RUN
        and following.lexemes["info"] == OUTPUT
        and not document.text[block.end : following.start].strip()
    }


def without_code(text: str) -> str:
    """``text`` with every fenced block blanked out, keeping the line numbers of everything else."""
    outermost, end = [], -1
    # A ````markdown block may show fenced blocks inside it; blanking it blanks them too.
    for block in sorted(fenced_blocks(Document(text, "")), key=lambda block: block.start):
        if block.start >= end:
            outermost.append(block)
            end = block.end
    for block in reversed(outermost):
        text = text[: block.start] + "\n" * text.count("\n", block.start, block.end) + text[block.end :]
    return text


def line(document: Document, offset: int) -> int:
    return document.text.count("\n", 0, offset) + 1
