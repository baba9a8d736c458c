"""The chapters' exercises: where they stand on a page, what kinds they mix, and that the checker knows every
exercise a page asks it to check (the solutions themselves run with the page's other blocks, in Sybil)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from attention_exercises import EXERCISES
from sybil import Document

from docs_tools import config as site_config
from docs_tools.pages import (
    BUG,
    CHECK_CALL,
    HEADING,
    PREDICT,
    RUN,
    WRITE,
    exercises,
    fenced_blocks,
    line,
    shown_outputs,
)

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = tuple(site_config.complete_locales())
CHAPTERS = tuple(site_config.notebook_chapters())


def _text(lang: str, page: str) -> str:
    return (ROOT / "docs" / lang / f"{page}.md").read_text(encoding="utf-8")


def _with_exercises(lang: str) -> dict[str, list]:
    return {page: exercises(_text(lang, page)) for page in CHAPTERS if "{ #exercises }" in _text(lang, page)}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_chapters_exercises_are_its_last_section_and_mix_the_kinds(lang: str) -> None:
    for page, found in _with_exercises(lang).items():
        text = _text(lang, page)
        sections = [m for m in HEADING.finditer(text) if len(m["hashes"]) == 2]
        assert sections[-1]["id"] == "exercises", f"{lang}/{page}: Exercises is not the last section"
        assert len(found) >= 3, f"{lang}/{page}: {len(found)} exercises"
        start = sections[-1].start()
        assert all(exercise.section[0] > start for exercise in found)
        # Every ### heading of the section is an exercise's.
        subheadings = [m for m in HEADING.finditer(text, start) if len(m["hashes"]) == 3]
        assert [m["id"] for m in subheadings] == [exercise.id for exercise in found]
        kinds = {exercise.kind for exercise in found}
        assert PREDICT in kinds, f"{lang}/{page}: {kinds}"
        assert kinds & {WRITE, BUG}, f"{lang}/{page}: {kinds}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_chapter_ends_with_exercises(lang: str) -> None:
    assert sorted(_with_exercises(lang)) == sorted(CHAPTERS)


def test_the_checker_knows_every_exercise_a_page_checks_and_no_other() -> None:
    for lang in LANGUAGES:
        checked = [
            exercise.id
            for found in _with_exercises(lang).values()
            for exercise in found
            if exercise.kind in (WRITE, BUG)
        ]
        assert len(checked) == len(set(checked)), f"{lang}: an exercise id used twice"
        assert sorted(checked) == sorted(EXERCISES), lang


def test_the_languages_have_the_same_exercises_of_the_same_kinds() -> None:
    english = {page: [(e.id, e.kind, e.answer) for e in found] for page, found in _with_exercises("en").items()}
    for lang in LANGUAGES:
        assert {page: [(e.id, e.kind, e.answer) for e in found] for page, found in _with_exercises(lang).items()} == (
            english
        )


def test_the_page_model_tells_the_kinds_apart() -> None:
    text = """## Exercises { #exercises }

### Predict { #exercise-a }

What does `check("exercise-a", f)` print? (In prose, not a call.)

??? success "Answer"

    ```python
    print(1)
    ```

### Write { #exercise-b }

??? success "Solution"

    ```python
    def f(x):
        return x


    check("exercise-b", f)
    ```

### Fix { #exercise-c }

```python
def g(x):
    return -x


check("exercise-c", g)
```

??? success "Solution"

    ```python
    def g(x):
        return x
    ```
"""
    found = exercises(text)
    assert [(e.id, e.kind, e.answer) for e in found] == [
        ("exercise-a", PREDICT, None),
        ("exercise-b", WRITE, "f"),
        ("exercise-c", BUG, "g"),
    ]
    assert text[slice(*found[1].solution)].startswith('??? success "Solution"\n')
    with pytest.raises(ValueError, match="exercise-d has 0 folded solutions"):
        exercises("### Lost { #exercise-d }\n\nNo solution.\n")


#: What the checker prints: a verdict line, ✓ or ✗ with the exercise's id, and what follows it.
VERDICT = re.compile(r"^[✓✗] exercise-[\w-]+:? ?")


def _checker_outputs(lang: str, page: str) -> list[tuple[int, str]]:
    """Each output block under a block that calls the checker, with its line in the page."""
    text = _text(lang, page)
    document = Document(text, page)
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    return [
        (line(document, outputs[block.start].start), str(outputs[block.start].lexemes["source"]))
        for block in blocks
        if block.lexemes["info"] == RUN and CHECK_CALL.search(str(block.lexemes["source"])) and block.start in outputs
    ]


def _said(output: str) -> list[str]:
    """What the checker said, one item each: the problem (after ✗ and the id), the hint, each thing a ✓ names;
    a wrapped item joined back into one line. What the page printed before the verdict is left out."""
    lines = output.splitlines()
    start = next(number for number, text in enumerate(lines) if VERDICT.match(text))
    items = [VERDICT.sub("", lines[start])]
    for text in lines[start + 1 :]:
        if re.match(r"  (?:- |提示：|Hint: )", text):
            items.append(text.strip().removeprefix("- "))
        else:
            items[-1] += " " + text.strip()
    return [item for item in items if item]


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_verdict_a_chinese_page_shows_is_chinese(page: str) -> None:
    """Under every call of the checker on a Chinese page, all it printed is Chinese: the problem, the hint and
    each thing a ✓ names, but for code and PyTorch's own error messages, which it quotes."""
    shown = _checker_outputs("zh", page)
    assert shown, f"zh/{page}: no checker output"
    for number, output in shown:
        for item in _said(output):
            assert re.search(r"[\u4e00-\u9fff]", item), f"zh/{page}, line {number}: {item!r}"
            # Left in English: three words of prose in a row, outside code, a quoted error and a tensor shown.
            prose = re.sub(r"`[^`]*`|(?<=抛出了 ).*?(?=$|提示)|tensor\([^()]*\)", " ", item)
            assert not re.search(r"(?:\b[A-Za-z]{2,}\b[ ,]+){2}\b[A-Za-z]{2,}\b", prose), f"zh/{page}: {item!r}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_verdict_an_english_page_shows_is_english(page: str) -> None:
    """The other way round: the English page shows no Chinese (a page run after a Chinese one in the same
    process would, if the checker's language outlived its page)."""
    for number, output in _checker_outputs("en", page):
        assert not re.search(r"[\u4e00-\u9fff]", output), f"en/{page}, line {number}: {output}"


#: The fold's title and the label the hint starts with, by language: the checker's own.
HINT_LABELS = {"en": "Hint", "zh": "提示"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_bug_shows_its_failure_and_folds_its_hint(lang: str) -> None:
    """A find-the-bug exercise shows the code and what the checker says of it (the ✗, the reference, the smallest
    failing input), and folds the hint, which gives the fix away, for the reader to open when stuck."""
    label = HINT_LABELS[lang]
    bugs = 0
    for page, found in _with_exercises(lang).items():
        text = _text(lang, page)
        document = Document(text, page)
        blocks = list(fenced_blocks(document))
        outputs = shown_outputs(document, blocks)
        for exercise in found:
            if exercise.kind != BUG:
                continue
            calling = [
                block
                for block in blocks
                if block.lexemes["info"] == RUN
                and exercise.section[0] <= block.start < exercise.solution[0]
                and any(call["id"] == exercise.id for call in CHECK_CALL.finditer(str(block.lexemes["source"])))
            ]
            assert len(calling) == 1, f"{lang}/{page}: {exercise.id}"
            output = outputs[calling[0].start].lexemes
            assert output.get("title") == label, f"{lang}/{page}: {exercise.id}'s hint is not folded"
            shown, folded = output["shown"], output["folded"]
            assert f"✗ {exercise.id}: " in shown
            assert label not in shown, f"{lang}/{page}: {exercise.id} shows its hint"
            assert folded.strip().startswith(label), folded
            bugs += 1
    assert bugs >= sum(exercise.endswith("-bug") for exercise in EXERCISES) == 26


#: The three items that open a write-it's contract, by language.
#: A dtype named in a contract's inputs: float32, float16, bfloat16, int64, bool, or the word dtype itself.
DTYPE = re.compile(r"\b(?:b?float(?:16|32|64)?|u?int(?:8|16|32|64)|bool|long|dtype)\b")
CONTRACT = {
    "en": ("- **Inputs:** ", "- **Returns:** ", "- **May use:** "),
    # The colon outside the bold: CommonMark (Jupyter, GitHub) closes no `**` between "：" and a Chinese character.
    "zh": ("- **输入**：", "- **返回**：", "- **可以使用**："),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_write_it_states_its_inputs_its_output_and_what_it_may_use(lang: str) -> None:
    """A learner needs these to start: the inputs' shapes and dtype, what comes back, and which helpers are
    allowed (the review of 2026-11-26 found tasks that left each out)."""
    written = 0
    for page, found in _with_exercises(lang).items():
        text = _text(lang, page)
        for exercise in found:
            if exercise.kind != WRITE:
                continue
            task = text[exercise.section[0] : exercise.solution[0]]
            starts = [task.find("\n" + item) for item in CONTRACT[lang]]
            assert all(start > 0 for start in starts), f"{lang}/{page}: {exercise.id} lacks {CONTRACT[lang]}"
            assert starts == sorted(starts), f"{lang}/{page}: {exercise.id}"
            inputs = task[starts[0] : starts[1]]
            assert DTYPE.search(inputs), f"{lang}/{page}: {exercise.id}: no dtype"
            assert "(" in inputs, f"{lang}/{page}: {exercise.id}: no shape"
            written += 1
    assert written == 20
