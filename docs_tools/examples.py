"""Every ```` ```python ```` block of the pages as a Sybil example: run in the page's namespace, in order, and
what it prints compared with the output block under it (``docs_tools.outputs``). The root ``conftest.py``
collects the pages with ``sybil()``.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import SkipParser

from docs_tools.outputs import compare_output
from docs_tools.pages import OUTPUT, RUN, TRACEBACK, fenced_blocks, line, shown_outputs


class PythonWithOutputParser:
    """Yields one example per ```` ```python ```` block; its expected output is the block after it."""

    def __call__(self, document: Document) -> Iterable[Region]:
        blocks = list(fenced_blocks(document))
        outputs = shown_outputs(document, blocks)
        # An output's blocks: one, or two where a fold holds the rest of it.
        claimed = {
            block.start for block in blocks for output in outputs.values() if output.start <= block.start < output.end
        }
        for block in blocks:
            info = block.lexemes["info"]
            if info == RUN:
                output = outputs.get(block.start)
                expected = None if output is None else str(output.lexemes["source"])
                source = str(block.lexemes["source"])
                yield Region(block.start, block.end, (source, expected, line(document, block.start)), evaluate)
            elif info == OUTPUT and block.start not in claimed:
                raise ValueError(
                    f"{document.path}, line {line(document, block.start)}: an output block must directly follow"
                    " a ```python block, or nothing checks it"
                )


def evaluate(example: Example) -> str | None:
    source, expected, line = example.parsed
    code = compile("\n" * line + source, example.path, "exec")
    printed = io.StringIO()
    exception_line = None
    with contextlib.redirect_stdout(printed):
        try:
            exec(code, example.namespace)
        except Exception as error:
            if expected is None or (TRACEBACK not in expected and not _ends_with_exception(expected, error)):
                raise
            exception_line = f"{type(error).__name__}: {error}"
    actual = printed.getvalue()
    if exception_line is not None:
        actual += exception_line + "\n"
    return compare_output(expected or "", actual)


def _ends_with_exception(expected: str, error: Exception) -> bool:
    lines = expected.strip().splitlines()
    return bool(lines) and lines[-1].startswith(f"{type(error).__name__}:")


def sybil(docs: Path) -> Sybil:
    """The pages under ``docs`` as Sybil documents: each block an example, the skip directive honoured."""
    return Sybil(
        parsers=[PythonWithOutputParser(), SkipParser()],
        path=str(docs),
        patterns=["*.md"],
        name="docs",
        teardown=leave_the_process_as_found,
    )


def leave_the_process_as_found(namespace: dict[str, Any]) -> None:
    """Undo what a page sets for the whole process, so that the pages run after it in the same worker print
    what they show whatever ran before them: the exercise checker's language (a translated page's
    ``set_language("zh")``) and torch's print options (``torch.set_printoptions(sci_mode=False)``, which
    would print another page's ``1.2339e-04`` as ``0.0001``). The page's own imports are used, so that the
    tooling imports neither the checker nor torch."""
    set_language = namespace.get("set_language")
    if callable(set_language):
        set_language("en")
    torch = namespace.get("torch")
    if torch is not None and callable(getattr(torch, "set_printoptions", None)):
        torch.set_printoptions(profile="default")  # sci_mode too: back to automatic
