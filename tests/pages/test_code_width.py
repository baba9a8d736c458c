"""Code fits its block: no shape comment hides behind a sideways scroll.

The rule (CONTRIBUTING.md, "Code that fits"): every line of a ```` ```python ```` or ```` ```output ````
block, and every line of library code a page includes with ``--8<--``, is at most ``MAX_COLUMNS``
columns wide, a wide (Chinese) character counting as two. A shape comment that would make its line
longer goes on its own line above the line it describes.

The Markdown test below enforces the rule on the sources; the browser tests check what it is for, on
the built site (tests/site/test_code_blocks_on_screen.py).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
from sybil import Document

from docs_tools import config as site_config
from docs_tools import pages, records
from docs_tools.pages import INCLUDE, OUTPUT, RUN, fenced_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LANGUAGES = tuple(site_config.complete_locales())  # mkdocs.yml: English and every complete translation

#: At 1280 px, with both of Material's sidebars, a code block shows 80 columns of its 13.6 px monospace
#: font; 79 (PEP 8's limit) keeps one column to spare for fonts a little wider than the one measured.
MAX_COLUMNS = 79

HOW_TO_FIX = (
    "how to fix: put a long # comment (a shape comment) on its own line above the line it describes; "
    "split long calls over several lines inside their brackets; for an output block, make the code "
    "print less per line (a smaller slice, fewer decimals, one value per print)"
)


def columns(line: str) -> int:
    """How many monospace columns ``line`` takes: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


@dataclass(frozen=True)
class Line:
    where: str  # file:line
    text: str

    def problem(self) -> str:
        return (
            f"{self.where}: {columns(self.text)} columns, over the limit of {MAX_COLUMNS}:\n"
            f"    {self.text}\n    {HOW_TO_FIX}"
        )


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def library_section(include: str, root: Path = ROOT) -> list[Line]:
    """The lines that ``--8<-- "path:Name"`` shows, with their places in the library file."""
    path, section = pages.library_section(include, root)
    return [Line(f"{_shown(path)}:{number}", text) for number, text in section]


def code_lines(page: Path, root: Path = ROOT) -> list[Line]:
    """Every line a reader sees in the page's python and output blocks, included library code too."""
    text = page.read_text(encoding="utf-8")
    shown = []
    for block in fenced_blocks(Document(text, str(page))):
        if block.lexemes["info"] not in (RUN, OUTPUT):
            continue
        first = text.count("\n", 0, block.start) + 2  # the line after the opening fence
        for offset, line in enumerate(str(block.lexemes["source"]).splitlines()):
            if INCLUDE.match(line):
                shown += library_section(line, root)
            else:
                shown.append(Line(f"{_shown(page)}:{first + offset}", line))
    return shown


def too_long(page: Path, root: Path = ROOT) -> list[str]:
    return [line.problem() for line in code_lines(page, root) if columns(line.text) > MAX_COLUMNS]


PAGES = [f"{lang}/{source}" for lang in LANGUAGES for source in records.pages()]


@pytest.mark.parametrize("page", PAGES)
def test_every_code_line_fits_the_block(page: str) -> None:
    problems = too_long(DOCS / page)
    assert not problems, f"{len(problems)} code lines too wide on {page}:\n" + "\n".join(problems)


def test_the_check_sees_long_lines_in_pages_outputs_and_included_library_code(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mod.py").write_text(
        f"def helper():\n    # --8<-- [start:Long]\n    x = 1\n    y = x  # {'s' * 80}\n    # --8<-- [end:Long]\n",
        encoding="utf-8",
    )
    fits = "x = 1  # " + "a" * (MAX_COLUMNS - 9)
    wide = "x = 1  # " + "形" * ((MAX_COLUMNS - 9) // 2 + 1)  # as many characters as `fits`, nearly
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        f"```python\n{fits}\n{fits}a\n```\n\n"
        f"```output\n{'0' * (MAX_COLUMNS + 1)}\n```\n\n"
        f"```python\n{wide}\n```\n\n"
        '```python\n--8<-- "lib/mod.py:Long"\n```\n\n'
        f"```text\n{'t' * 200}\n```\n",
        encoding="utf-8",
    )
    problems = too_long(page, tmp_path)
    assert [problem.split(":", 2)[:2] for problem in problems] == [
        [str(page), "5"],
        [str(page), "9"],
        [str(page), "13"],
        [str(tmp_path / "lib" / "mod.py"), "4"],
    ]
    assert f"80 columns, over the limit of {MAX_COLUMNS}" in problems[0]
    assert "how to fix" in problems[0]
    assert columns(fits) == MAX_COLUMNS
    assert columns(wide) > MAX_COLUMNS >= len(wide)
