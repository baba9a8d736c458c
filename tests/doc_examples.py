"""Run every Python block on the site and compare what it prints with the output block shown under it.

Loaded as a pytest plugin (``-p doc_examples`` in ``pyproject.toml``), so the Markdown pages under
``docs/`` are collected like test files. The conventions, which ``CONTRIBUTING.md`` states for writers:

* A block fenced exactly as ```` ```python ```` runs; all blocks of one page share a namespace, in order.
  Sybil's rule, kept on purpose: ```` ```py ````, ```` ``` python ```` or ```` ```python title="x" ```` do
  not run, so ``tests/test_docs.py`` fails on any such fence.
* An ```` ```output ```` block right after it (only blank lines between) is what the block prints. A
  block with no output block must print nothing. An output block after anything else is an error:
  an output the suite cannot check is never shown.
* If the block raises, the output block ends with the exception line (``ValueError: ...``), optionally
  after a ``Traceback (most recent call last):`` line and ``...``.
* ``<!-- skip: next "reason" -->`` (Sybil's own directive) shows the next block without running it;
  ``tests/test_docs.py`` requires a reason.

Numbers are compared with a tolerance of two units in the last printed digit, so a last-digit
difference between torch versions or BLAS libraries passes while a wrong number fails; everything else
is compared exactly, except for spacing.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import itertools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

DOCS = Path(__file__).resolve().parent.parent / "docs"
RUN = "python"
OUTPUT = "output"

#: Every fenced block of a page, with its whole info string (what follows the backticks).
FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE))

#: An info string that asks for Python in any spelling: ```py, ``` python, ```python title="x", ```{.python}
PYTHON_LIKE = re.compile(r"^\s*\{?\s*\.?(?:py|python|python3|py3|pycon|ipython)\b", re.IGNORECASE)

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
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


def _line(document: Document, offset: int) -> int:
    return document.text.count("\n", 0, offset) + 1


class PythonWithOutputParser:
    """Yields one example per ```` ```python ```` block; its expected output is the block after it."""

    def __call__(self, document: Document) -> Iterable[Region]:
        blocks = list(fenced_blocks(document))
        outputs = shown_outputs(document, blocks)
        claimed = {output.start for output in outputs.values()}
        for block in blocks:
            info = block.lexemes["info"]
            if info == RUN:
                output = outputs.get(block.start)
                expected = None if output is None else str(output.lexemes["source"])
                source = str(block.lexemes["source"])
                yield Region(block.start, block.end, (source, expected, _line(document, block.start)), evaluate)
            elif info == OUTPUT and block.start not in claimed:
                raise ValueError(
                    f"{document.path}, line {_line(document, block.start)}: an output block must directly follow"
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


def _strip_traceback(text: str) -> str:
    """Drop a shown ``Traceback ...`` header and its ``...`` lines, keeping the exception line."""
    lines = text.rstrip("\n").splitlines()
    if TRACEBACK not in lines:
        return text
    start = lines.index(TRACEBACK)
    return "\n".join([*lines[:start], lines[-1]]) + "\n"


def _ulp(token: str) -> float:
    """One unit in the last printed digit of ``token``, or 0 for an exact (integer-looking) number."""
    mantissa, _, exponent = token.lower().partition("e")
    if "." not in mantissa:
        return 0.0 if not exponent else 10.0 ** int(exponent)
    decimals = len(mantissa.split(".")[1])
    if decimals == 0 and not exponent:
        return 0.0
    return 10.0 ** (int(exponent or 0) - decimals)


def _split(text: str) -> tuple[list[str], list[str]]:
    """The numbers in ``text`` and the text between them, with all whitespace removed."""
    numbers = NUMBER.findall(text)
    words = ["".join(part.split()) for part in NUMBER.split(text)]
    return numbers, words


def compare_output(expected: str, actual: str) -> str | None:
    """``None`` if ``actual`` matches ``expected``, else a message with a diff."""
    expected = _strip_traceback(expected)
    # An exception line may be shown cut short: "RuntimeError: view size is not compatible ..."
    # (the cut may also drop the further lines of a message that spans several).
    shown_last = expected.rstrip("\n").rpartition("\n")[2]
    if shown_last.endswith(" ..."):
        start = ("\n" + actual).rfind("\n" + shown_last[:-4])
        if start != -1:
            actual = actual[:start] + shown_last + "\n"
    want_numbers, want_words = _split(expected)
    got_numbers, got_words = _split(actual)
    problem = None
    if want_words != got_words or len(want_numbers) != len(got_numbers):
        problem = "the printed text differs"
    else:
        for want, got in zip(want_numbers, got_numbers, strict=True):
            tolerance = 2 * _ulp(want)
            if abs(float(want) - float(got)) > tolerance + 1e-12:
                problem = f"{got} differs from the shown {want} by more than {tolerance:g}"
                break
    if problem is None:
        return None
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True), "shown output", "printed output"
        )
    )
    return f"{problem}:\n{diff or repr(actual)}"


sybil = Sybil(parsers=[PythonWithOutputParser(), SkipParser()], path=str(DOCS), patterns=["*.md"], name="docs")

pytest_collect_file = sybil.pytest()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list) -> None:
    """A page's blocks share one namespace, in order: under pytest-xdist (``--dist loadgroup``, as
    ``dev.py test`` runs the suite) they all go to the same worker."""
    for item in items:
        if item.path.suffix == ".md":
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(DOCS).as_posix()))
