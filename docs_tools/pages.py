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

import ast
import itertools
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sybil import Document, Region
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

RUN = "python"
OUTPUT = "output"

#: Every fenced block of a page, with its whole info string (what follows the backticks).
FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE))

#: An info string that asks for Python in any spelling: ```py, ``` python, ```python title="x", ```{.python}
PYTHON_LIKE = re.compile(r"^\s*\{?\s*\.?(?:py|python|python3|py3|pycon|ipython)\b", re.IGNORECASE)

TRACEBACK = "Traceback (most recent call last):"

#: A heading, with its explicit id where it has one: ``## Splitting heads { #split-heads }``.
HEADING = re.compile(r"^(?P<hashes>#{1,6}) (?P<title>.*?)(?:[ \t]*\{[ \t]*#(?P<id>[\w-]+)[^}\n]*\})?[ \t]*$", re.M)
#: Sybil's skip directive: ``<!-- skip: next "why" -->``.
SKIP = re.compile(r"<!--+\s*skip:\s*(?P<action>\w+)(?P<reason>[^\n]*?)\s*--+>")
#: An interactive piece, on a line of its own, the same in every language (hooks/interactive.py draws it; a
#: notebook leaves it out): ``<div data-attention-explorer="masks"></div>``, ``<div data-stride-tracer="heads"></div>``.
INTERACTIVE = re.compile(
    r"<div data-(?P<kind>attention-explorer|stride-tracer|decode-stepper|mask-composer|tile-stepper)"
    r'="(?P<name>[\w-]+)"></div>'
)
#: A line of a block that shows a section of a library file: ``--8<-- "path:Name"`` (pymdownx.snippets' syntax).
INCLUDE = re.compile(r'^\s*--8<-- "(?P<path>[^":]+):(?P<name>\w+)"\s*$')


def _is_overload(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        (isinstance(d, ast.Name) and d.id == "overload") or (isinstance(d, ast.Attribute) and d.attr == "overload")
        for d in node.decorator_list
    )


def _is_type_checking_block(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _hidden_lines(source: str) -> set[int]:
    """The line numbers (1-based) a page does not show of ``source``: every docstring (and the blank line after a
    function's), and what only a type checker reads: the ``@overload`` signatures, an ``if TYPE_CHECKING:``
    block, each with the comment lines right above it and the blank line after it."""
    lines = source.splitlines()
    hidden: set[int] = set()

    def hide(first: int, last: int) -> None:
        while first > 1 and lines[first - 2].strip().startswith("#"):
            first -= 1  # the comment that introduces it
        hidden.update(range(first, last + 1))
        if last < len(lines) and not lines[last].strip():
            hidden.add(last + 1)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and (_is_overload(node) or _is_type_checking_block(node)):
            decorators = getattr(node, "decorator_list", [])
            hide(min([node.lineno, *(d.lineno for d in decorators)]), node.end_lineno or node.lineno)
            continue
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not node.body:
            continue
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            end = first.end_lineno or first.lineno
            hidden.update(range(first.lineno, end + 1))
            # def f(x):  """Doc."""  <blank>  body: the body follows the def line, as if there were no docstring.
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and end < len(lines)
                and not lines[end].strip()
            ):
                hidden.add(end + 1)
    return hidden


def library_section(include: str, root: Path) -> tuple[Path, list[tuple[int, str]]]:
    """What the include line ``include`` shows: the library file, and the section's lines with their line
    numbers in the file, dedented, without docstrings and what only a type checker reads. A page shows the
    code as nanoGPT reads, and the API reference (mkdocstrings) shows the docstrings and signatures."""
    match = INCLUDE.match(include)
    if match is None:
        raise ValueError(f'include: expected a line --8<-- "path:Name", got {include!r}')
    path, name = root / match["path"], match["name"]
    if not path.is_file():
        raise ValueError(f"{include.strip()}: there is no file {match['path']}")
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    markers = [
        i for i, line in enumerate(lines) if line.strip() in (f"# --8<-- [start:{name}]", f"# --8<-- [end:{name}]")
    ]
    if len(markers) != 2 or not lines[markers[0]].strip().startswith("# --8<-- [start:"):
        raise ValueError(
            f"{include.strip()}: {match['path']} needs one '# --8<-- [start:{name}]' line and one "
            f"'# --8<-- [end:{name}]' line after it"
        )
    hidden = _hidden_lines(source)
    numbered = [(number, lines[number - 1]) for number in range(markers[0] + 2, markers[1] + 1) if number not in hidden]
    dedented = textwrap.dedent("\n".join(text for _, text in numbered)).split("\n")
    return path, [(number, text) for (number, _), text in zip(numbered, dedented, strict=True)]


def library_code(include: str, root: Path) -> str:
    """The code that the include line ``include`` shows on the page, as one string."""
    return "\n".join(text for _, text in library_section(include, root)[1]).strip("\n")


#: A skip directive and the blank lines after it, up to the block it hides.
_SKIP_BEFORE = re.compile(SKIP.pattern + r"\s*\Z")


def skipped(text: str, block: Region) -> bool:
    """Whether ``block`` is shown without running: a skip directive (``<!-- skip: next "why" -->``) stands right
    before it, as before library source and code that needs what the suite lacks (a download)."""
    return _SKIP_BEFORE.search(text, 0, block.start) is not None


def fenced_blocks(document: Document) -> Iterator[Region]:
    return iter(FENCES(document))


#: What stands between an output block and the fold that holds the rest of it: ``??? tip "Hint"`` (the
#: hint of a find-the-bug exercise's ✗, for the reader to open when stuck).
FOLD = re.compile(r'\s*\?\?\? tip(?: "(?P<title>[^"\n]*)")?\n\s*')


def shown_outputs(document: Document, blocks: list[Region]) -> dict[int, Region]:
    """The output block shown under each ```` ```python ```` block, keyed by the code block's start.

    An output block belongs to the code block right above it, with only blank lines between. Where a
    ``??? tip`` fold right under it holds another output block, the two are one output: the region spans both,
    its ``source`` is the whole text, ``shown`` the part in view, ``folded`` the rest and ``title`` the fold's.
    """
    found = {}
    for index, (block, following) in enumerate(itertools.pairwise(blocks)):
        if not (
            block.lexemes["info"] == RUN
            and following.lexemes["info"] == OUTPUT
            and not document.text[block.end : following.start].strip()
        ):
            continue
        after = blocks[index + 2] if index + 2 < len(blocks) else None
        fold = None if after is None else FOLD.fullmatch(document.text[following.end : after.start])
        if after is not None and fold is not None and after.lexemes["info"] == OUTPUT:
            shown, folded = str(following.lexemes["source"]), str(after.lexemes["source"])
            lexemes = {
                "info": OUTPUT,
                "source": shown + folded,
                "shown": shown,
                "folded": folded,
                "title": fold["title"] or "",
            }
            following = Region(following.start, after.end, lexemes=lexemes)
        found[block.start] = following
    return found


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


# ---------------------------------------------------------------------------------------------------
# Exercises: a chapter's last section, ``## Exercises { #exercises }``, holds exercises, each under a heading
# ``### ... { #exercise-... }`` and each with its solution (or answer) folded below it in Material's
# ``??? success "..."`` block. An exercise is one of three kinds, told apart by where it calls the checker
# (``check("exercise-...", name)``, attention_exercises): inside its solution (write-it: the reader writes
# ``name``), in a block above the solution (find-the-bug: that block is the code to fix), or nowhere
# (predict-the-output: the solution runs the code the reader was asked about).
# ---------------------------------------------------------------------------------------------------
#: A folded solution: the ``??? success`` line and every line indented under it (or blank).
SOLUTION = re.compile(r'^\?\?\? success(?: "[^"\n]*")?\n(?:(?: {4}.*)?\n)*', re.M)
#: The code of a page's ```python blocks, indented or not.
PYTHON_CODE = re.compile(r"^[ ]*```python\n(.*?)^[ ]*```", re.M | re.S)
#: A call of the checker in a page's code.
CHECK_CALL = re.compile(r'\bcheck\("(?P<id>exercise-[\w-]+)", (?P<answer>\w+)\)')
#: What a notebook's answer cell starts with, in place of the solution's body.
WRITE, BUG, PREDICT = "write", "bug", "predict"


@dataclass(frozen=True)
class Exercise:
    """One exercise of a page: its id, its kind, where its section and its solution are in the page's text,
    and the name of the reader's answer (write-it and find-the-bug)."""

    id: str
    kind: str
    section: tuple[int, int]
    solution: tuple[int, int]
    answer: str | None


def exercises(text: str) -> list[Exercise]:
    """The exercises of a page, in order; a page without an Exercises section has none."""
    headings = [match for match in HEADING.finditer(text) if len(match["hashes"]) <= 3]
    found = []
    for index, heading in enumerate(headings):
        if not (heading["id"] or "").startswith("exercise-"):
            continue
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        section = text[heading.start() : end]
        solutions = list(SOLUTION.finditer(section))
        if len(solutions) != 1:
            raise ValueError(f"exercise {heading['id']} has {len(solutions)} folded solutions (??? success), not 1")
        solution = solutions[0]
        before, inside = section[: solution.start()], solution[0]
        # Only code calls the checker: prose may show the call too, in backticks.
        calls = {
            name: [
                m for code in PYTHON_CODE.findall(part) for m in CHECK_CALL.finditer(code) if m["id"] == heading["id"]
            ]
            for name, part in (("before", before), ("inside", inside))
        }
        kind = BUG if calls["before"] else WRITE if calls["inside"] else PREDICT
        answer = next(iter(calls["before"] or calls["inside"]), None)
        found.append(
            Exercise(
                heading["id"],
                kind,
                (heading.start(), end),
                (heading.start() + solution.start(), heading.start() + solution.end()),
                None if answer is None else answer["answer"],
            )
        )
    return found


def answer_stub(solution: str, name: str, comment: str) -> str:
    """The start of a write-it exercise's answer: the solution's ``def`` or ``class`` of ``name`` with each
    function's body replaced by ``comment`` (``# your code here``), as a notebook's answer cell shows it."""
    lines = solution.splitlines()
    node = next(
        node
        for node in ast.parse(solution).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name
    )

    def function(fn: ast.FunctionDef) -> list[str]:
        indent = " " * (fn.body[0].col_offset)
        # The signature: from the def to the first line ending in ":" (the comments after it are no nodes).
        end = next(i for i in range(fn.lineno - 1, len(lines)) if lines[i].rstrip().endswith(":"))
        header = lines[fn.lineno - 1 : end + 1]
        first = fn.body[0]
        # nn.Module's __init__ keeps its super().__init__(), without which no layer can be set.
        if fn.name == "__init__" and "super().__init__()" in ast.unparse(first):
            return [*header, lines[first.lineno - 1], indent + comment]
        return [*header, indent + comment, indent + "..."]

    if isinstance(node, ast.FunctionDef):
        return "\n".join(function(node)) + "\n"
    methods = [item for item in node.body if isinstance(item, ast.FunctionDef)]
    header = lines[node.lineno - 1]
    return header + "\n" + "\n\n".join("\n".join(function(method)) for method in methods) + "\n"


# ---------------------------------------------------------------------------------------------------
# Predict-then-reveal: a predict-the-output exercise asks its question in the page, above its folded answer,
# in a block the reader answers by picking one choice (hooks/predict.py draws it, predict.js runs it):
#
#     <div data-predict="exercise-predict-doubled" data-answer="2" markdown>
#
#     By what factor does each score change?
#
#     - `2`
#
#         Why not: ... (Markdown, indented 4 spaces, one paragraph or more)
#
#     - `4`
#
#         Why it is right: ...
#
#     </div>
#
# The first paragraph is the question; each item is a choice, its label on the item's one line, then what the
# reader reads once they pick it. ``data-answer`` is the right choice's number, from 1; data-predict is the
# exercise's id, or that id and a suffix (``exercise-predict-doubled-sign``) for a second question. Both
# attributes, the number of choices and the code in their labels are the same in every language;
# tests/pages/test_predictions.py checks the right choice against attention_lib.
# ---------------------------------------------------------------------------------------------------
PREDICT_BLOCK = re.compile(
    r'^<div data-predict="(?P<id>exercise-[\w-]+)" data-answer="(?P<answer>\d+)" markdown>\n'
    r"(?P<body>.*?)\n</div>[ \t]*$",
    re.M | re.S,
)
#: A choice of a predict block: ``- label`` at the start of a line, then its lines indented by 4 (or blank).
PREDICT_CHOICE = re.compile(r"^- (?P<label>[^\n]+)\n(?P<why>(?:(?: {4}[^\n]*)?\n)*)", re.M)


@dataclass(frozen=True)
class Choice:
    label: str
    why: str


@dataclass(frozen=True)
class Prediction:
    """One predict-then-reveal question of a page: its id, the right choice's index (from 0), the question and
    the choices (Markdown), and where it is in the page's text."""

    id: str
    answer: int
    question: str
    choices: tuple[Choice, ...]
    span: tuple[int, int]


def predictions(text: str) -> list[Prediction]:
    """The predict-then-reveal questions of a page, in order; a block that breaks the format raises ValueError."""
    found = []
    for match in PREDICT_BLOCK.finditer(text):
        body = match["body"].strip("\n") + "\n"
        first = PREDICT_CHOICE.search(body)
        question = body[: first.start() if first else len(body)].strip()
        choices = tuple(
            Choice(m["label"].strip(), textwrap.dedent(m["why"]).strip()) for m in PREDICT_CHOICE.finditer(body)
        )
        rest = PREDICT_CHOICE.sub("", body[first.start() :] if first else "").strip()
        problems = [
            "no question before the choices" if not question or "\n\n" in question else "",
            f"{len(choices)} choices, not 2 to 5" if not 2 <= len(choices) <= 5 else "",
            "a choice without an explanation" if any(not c.why for c in choices) else "",
            f"text outside the choices: {rest[:40]!r}" if rest else "",
            f"data-answer={match['answer']}, not a choice's number"
            if not 1 <= int(match["answer"]) <= len(choices)
            else "",
        ]
        problems = [p for p in problems if p]
        if problems:
            raise ValueError(f"predict block {match['id']}: " + "; ".join(problems))
        found.append(Prediction(match["id"], int(match["answer"]) - 1, question, choices, match.span()))
    return found
