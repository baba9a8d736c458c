"""The chapters' exercises: where they stand on a page, what kinds they mix, and that the checker knows every
exercise a page asks it to check (the solutions themselves run with the page's other blocks, in Sybil)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attention_lib.exercises import EXERCISES
from docs_tools import config as site_config
from docs_tools.pages import BUG, HEADING, PREDICT, WRITE, exercises

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
