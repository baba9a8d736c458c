"""The pages' code blocks: none escapes execution, and what is shown is what printed.

That the two languages show the same code, outputs, headings and links is checked by
tests/tooling/test_translations.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from sybil import Document

from docs_tools import config as site_config
from docs_tools import examples, records, translation_checks
from docs_tools.examples import PythonWithOutputParser, evaluate
from docs_tools.outputs import compare_output
from docs_tools.pages import PYTHON_LIKE, RUN, SKIP, fenced_blocks, shown_outputs, without_code
from docs_tools.project import DOCS

LANGUAGES = tuple(site_config.complete_locales())  # mkdocs.yml: English and every complete translation
PAGES = records.pages()  # the English pages, as paths relative to docs/en


def escapes(path: Path) -> list[str]:
    """The Python-like blocks of one page that neither run nor carry a skip with a reason."""
    document = examples.sybil(DOCS).parse(path)
    runs = {start for start, region in document.regions if region.evaluator is evaluate}
    blocks = list(fenced_blocks(document))
    problems = []
    text = document.text
    for block in blocks:
        info = block.lexemes["info"]
        line = text.count("\n", 0, block.start) + 1
        if not PYTHON_LIKE.match(info):
            continue
        if info != RUN or block.start not in runs:
            problems.append(f"{path.name}:{line}: ```{info} does not run; fence it exactly as ```python")
    for match in SKIP.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        reason = match.group("reason").strip().strip("\"'")
        if match.group("action") != "next":
            problems.append(f"{path.name}:{line}: only 'skip: next' is allowed, so one skip hides one block")
        elif not reason:
            problems.append(f"{path.name}:{line}: 'skip: next' needs a reason in quotes")
        following = next((block for block in blocks if block.start > match.end()), None)
        if following is None or following.lexemes["info"] != RUN or text[match.end() : following.start].strip():
            problems.append(f"{path.name}:{line}: 'skip: next' must stand right before a ```python block")
    return problems


@pytest.mark.parametrize("page", [f"{lang}/{page}" for lang in LANGUAGES for page in PAGES])
def test_no_python_block_escapes_execution(page: str) -> None:
    assert escapes(DOCS / page) == []


def test_the_escape_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\n\n"
        "```py\nx = 2\n```\n\n"
        "``` python\nx = 3\n```\n\n"
        '```python title="x.py"\nx = 4\n```\n\n'
        "```{.python}\nx = 5\n```\n\n"
        "   ```pycon\n   >>> x\n   ```\n\n"
        "<!-- skip: next -->\n```python\nx = 6\n```\n\n"
        '<!-- skip: next "why" -->\n```text\nnot python\n```\n',
        encoding="utf-8",
    )
    problems = escapes(page)
    for line in (5, 9, 13, 17, 21):
        assert any(problem.startswith(f"page.md:{line}:") and "does not run" in problem for problem in problems), line
    assert any(problem.startswith("page.md:25:") and "needs a reason" in problem for problem in problems)
    assert any(problem.startswith("page.md:30:") and "right before" in problem for problem in problems)
    assert not any(problem.startswith("page.md:1:") for problem in problems)


def test_an_output_block_nothing_checks_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Some text.\n\n```output\n42\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must directly follow"):
        list(PythonWithOutputParser()(Document(page.read_text(encoding="utf-8"), str(page))))


FOLDED = (
    '```python\nprint("first")\nprint("  Hint: second")\n```\n\n```output\nfirst\n```\n\n'
    '??? tip "Hint"\n\n    ```output\n      Hint: {}\n    ```\n'
)


@pytest.mark.parametrize(("folded", "ok"), [("second", True), ("another", False)])
def test_a_fold_under_an_output_holds_the_rest_of_it(tmp_path: Path, folded: str, ok: bool) -> None:
    """A find-the-bug exercise's hint is folded under its ✗: the two blocks are one output, both checked."""
    page = tmp_path / "page.md"
    page.write_text(FOLDED.format(folded), encoding="utf-8")
    document = Document(page.read_text(encoding="utf-8"), str(page))
    blocks = list(fenced_blocks(document))
    [output] = shown_outputs(document, blocks).values()
    assert (output.lexemes["shown"], output.lexemes["title"]) == ("first\n", "Hint")
    assert output.lexemes["folded"].strip() == f"Hint: {folded}"
    [region] = PythonWithOutputParser()(document)  # the fold's block is claimed, not an error
    assert (evaluate(SimpleNamespace(parsed=region.parsed, path=str(page), namespace={})) is None) == ok


def test_a_fold_that_follows_no_output_is_an_output_nothing_checks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```python\nx = 1\n```\n\n??? tip "Hint"\n\n    ```output\n    1\n    ```\n', encoding="utf-8")
    with pytest.raises(ValueError, match="must directly follow"):
        list(PythonWithOutputParser()(Document(page.read_text(encoding="utf-8"), str(page))))


@pytest.mark.parametrize(
    ("shown", "printed", "ok"),
    [
        ("tensor([0.4300, 0.1500])\n", "tensor([0.4301, 0.1499])\n", True),  # last digit: BLAS noise
        ("tensor([0.4300, 0.1500])\n", "tensor([0.4310, 0.1500])\n", False),  # a wrong number
        ("tensor([[ 0.1000, -0.2000]])\n", "tensor([[0.1000, -0.2000]])\n", True),  # column padding
        ("tensor([-0.0000, 1.0000])\n", "tensor([0.0000, 1.0000])\n", True),
        ("tensor([1., 2.])\n", "tensor([1., 3.])\n", False),  # integral values are exact
        ("torch.Size([2, 6, 4])\n", "torch.Size([2, 6, 5])\n", False),
        ("1.2346e+03\n", "1.2347e+03\n", True),
        ("1.2346e+03\n", "1.2356e+03\n", False),
        ("True\n", "False\n", False),
        ("tensor([1.])\n", "tensor([1.])\nextra line\n", False),
        ("Traceback (most recent call last):\n  ...\nValueError: bad\n", "ValueError: bad\n", True),
        ("ValueError: a long ...\n", "ValueError: a long message\n", True),
        ("ValueError: a long ...\n", "ValueError: another message\n", False),
    ],
)
def test_output_comparison(shown: str, printed: str, ok: bool) -> None:
    assert (compare_output(shown, printed) is None) is ok


@pytest.mark.parametrize("page", [f"{lang}/{page}" for lang in LANGUAGES for page in PAGES])
def test_no_formula_in_a_heading(page: str) -> None:
    """The table of contents and search show headings as plain text, so TeX there shows up raw."""
    text = (DOCS / page).read_text(encoding="utf-8")
    assert [heading for _, heading, _ in translation_checks.headings(text) if "$" in heading] == []


def test_blanking_code_keeps_what_follows_a_block_shown_inside_another() -> None:
    """A ````markdown example holding a ```python block is blanked once, as a whole, lines kept."""
    text = "# A\n\n````markdown\n```python\nx = 1\n```\n````\n\n## B { #b }\n"
    assert without_code(text) == "# A\n\n" + "\n" * 5 + "\n## B { #b }\n"


def test_a_page_leaves_torchs_print_options_as_it_found_them() -> None:
    """A page that sets torch's print options for its own numbers (real-model.md: ``sci_mode=False``) would change
    how every page run after it in the same worker prints: ``1.2339e-04`` became ``0.0001`` on another page."""
    import torch

    small = torch.tensor([1.2339e-04, 9.9988e-01, 3.0586e-07])
    before = str(small)
    torch.set_printoptions(sci_mode=False, precision=2)
    try:
        assert str(small) != before
        examples.leave_the_process_as_found({"torch": torch})
        assert str(small) == before
    finally:
        torch.set_printoptions(profile="default")
