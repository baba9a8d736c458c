"""Every exercise's solution runs when a reader copies it into a fresh Python, on its own.

On the page a solution runs after every block above it, in one namespace (Sybil, tests/pages/test_docs.py),
so a solution that leans on the page's imports or inputs passes there and fails for a reader who opens
the exercise, copies the solution and pastes it alone. Here each solution's ```` ```python ```` blocks run in
order, the way they sit together in its fold, in a new interpreter (the project's Python, in an empty
folder) and nothing else: no import from the page, no input it built. A predict-the-output exercise whose
question shows code (a module to predict, say) runs that code first: it is the block right above the
answer, which the answer continues.

The English solutions run; a translated solution is the same code with its comments translated (a test
checks that token by token), so each runs once. What it prints must be what the English page shows under
the solution: the code is the same in every language, and a fresh Python's checker answers in English
until ``set_language`` says otherwise (a Chinese page calls it once, in the first block of its Exercises
section).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest
from sybil import Document

from docs_tools import config as site_config
from docs_tools import records
from docs_tools.kernels import run_script
from docs_tools.outputs import compare_output
from docs_tools.pages import PREDICT, RUN, exercises, fenced_blocks, shown_outputs

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = tuple(site_config.complete_locales())
#: Every page, as its name without .md: the chapters have exercises, and a solution anywhere else would count too.
PAGES = tuple(page.removesuffix(".md") for page in records.pages())
#: A folded solution, counted as the reader sees them: a line that opens Material's ``??? success`` block.
FOLDED = re.compile(r'^\?\?\? success(?: "[^"\n]*")?$', re.M)


@dataclass(frozen=True)
class Solution:
    lang: str
    page: str
    exercise: str
    #: The code that runs, block by block: the question's (a predict exercise's), then the solution's.
    code: tuple[str, ...]
    #: What the solution's blocks print, as its output blocks show it (one entry per solution block).
    shown: tuple[str, ...]


def _text(lang: str, page: str) -> str:
    return (ROOT / "docs" / lang / f"{page}.md").read_text(encoding="utf-8")


def _solutions(lang: str, page: str) -> list[Solution]:
    text = _text(lang, page)
    document = Document(text, page)
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    python = [block for block in blocks if block.lexemes["info"] == RUN]

    def within(span: tuple[int, int]) -> list:
        return [block for block in python if span[0] <= block.start < span[1]]

    found = []
    for exercise in exercises(text):
        asked: list = within((exercise.section[0], exercise.solution[0])) if exercise.kind == PREDICT else []
        answer = within(exercise.solution)
        found.append(
            Solution(
                lang,
                page,
                exercise.id,
                tuple(str(block.lexemes["source"]) for block in asked + answer),
                tuple(
                    str(outputs[block.start].lexemes["source"]) if block.start in outputs else "" for block in answer
                ),
            )
        )
    return found


SOLUTIONS = [solution for lang in LANGUAGES for page in PAGES for solution in _solutions(lang, page)]
ENGLISH = {(solution.page, solution.exercise): solution for solution in SOLUTIONS if solution.lang == "en"}


def _without_comments(code: str) -> list[tuple[int, str]]:
    """The code's tokens, comments and layout left out: what runs."""
    ignored = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return [(token.type, token.string) for token in tokens if token.type not in ignored]


def test_every_translated_solution_runs_what_the_english_one_runs() -> None:
    """So running the English solutions alone runs every language's: a translated solution differs from the
    English one in its comments only."""
    for solution in SOLUTIONS:
        english = ENGLISH[solution.page, solution.exercise]
        assert [_without_comments(code) for code in solution.code] == [
            _without_comments(code) for code in english.code
        ], f"docs/{solution.lang}/{solution.page}.md#{solution.exercise}: other code than the English solution"


def test_every_folded_solution_is_collected() -> None:
    """The collection cannot come out empty or short: it holds one solution for every ``??? success`` fold of
    every chapter, counted on the raw text, and each has code."""
    for lang in LANGUAGES:
        folds = sum(len(FOLDED.findall(_text(lang, page))) for page in PAGES)
        collected = [solution for solution in SOLUTIONS if solution.lang == lang]
        assert len(collected) == folds, f"{lang}: {len(collected)} solutions collected, {folds} folds on the pages"
        chapters = len(site_config.notebook_chapters())
        assert folds >= 3 * chapters, f"{lang}: {folds} folds for {chapters} chapters, each with 3 exercises or more"
        assert [solution.exercise for solution in collected if not solution.code] == []


def _run(code: tuple[str, ...], folder: Path) -> subprocess.CompletedProcess[str]:
    """The blocks, pasted one after the other into a new Python with nothing defined (forked from one that has
    imported torch, as the notebooks' kernels are: docs_tools.kernels), run in an empty folder."""
    script = folder / "solution.py"
    script.write_text("\n\n".join(code), encoding="utf-8")
    return run_script(script, {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONIOENCODING": "utf-8"})


@pytest.mark.parametrize("solution", ENGLISH.values(), ids=[f"{s.page}.md#{s.exercise}" for s in ENGLISH.values()])
def test_a_solution_runs_alone_in_a_fresh_python(solution: Solution, tmp_path: Path) -> None:
    result = _run(solution.code, tmp_path)
    where = f"docs/{solution.lang}/{solution.page}.md, #{solution.exercise}"
    assert result.returncode == 0, (
        f"{where}: the solution, pasted alone into a fresh Python, fails; start it with the imports and inputs"
        f" it uses:\n{result.stderr[-3000:]}"
    )
    english = ENGLISH[solution.page, solution.exercise]
    assert len(english.shown) == len(solution.shown), f"{where}: not the English solution's blocks"
    problem = compare_output("".join(english.shown), result.stdout)
    assert problem is None, f"{where}: alone, it prints other than the page shows: {problem}"


def test_a_solution_that_leans_on_the_page_fails_here(tmp_path: Path) -> None:
    """The check can fail: a solution that uses the page's ``torch`` import without its own."""
    leaning = Solution("en", "masks", "exercise-x", ("print(torch.ones(2))\n",), ("tensor([1., 1.])\n",))
    result = _run(leaning.code, tmp_path)
    assert result.returncode != 0
    assert "NameError: name 'torch' is not defined" in result.stderr
    complete = ("import torch\n\nprint(torch.ones(2))\n",)
    assert compare_output("".join(leaning.shown), _run(complete, tmp_path).stdout) is None
