"""The catalogue of typical mistakes (scaling, the softmax's dimension, a mask's polarity, `.T` on a batch, `view`
without `transpose`, dropout in eval mode, ...): every exercise where a mistake can happen recognises it and gives
the catalogue's hint, the same words everywhere.

The cases are in mistakes/*.md, written by reviewers who saw neither the checker nor its tests: for each exercise,
which mistakes of the catalogue can happen in it (a table), one wrong answer for each, and right answers written
other ways than the pages'."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from attention_exercises import EXERCISES, LANGUAGES, diagnose
from attention_exercises._core import CATALOGUE, MISTAKES
from attention_exercises._messages import _language

FILES = sorted(Path(__file__).with_name("mistakes").glob("*.md"))
CASE = re.compile(
    r"^## (?P<exercise>exercise-[\w-]+) · (?P<verdict>\w+) · `(?P<name>\w+)`\n\n"
    r"(?P<why>.+?)\n\n```python\n(?P<source>.*?)^```$",
    re.M | re.S,
)
CASES = [
    {**match.groupdict(), "file": path.name}
    for path in FILES
    for match in CASE.finditer(path.read_text(encoding="utf-8"))
]


def _tables() -> dict[str, set[str]]:
    """Each exercise's mistakes as the reviewers judged them: the "keys that apply" of their tables."""
    found: dict[str, set[str]] = {}
    for path in FILES:
        for row in re.finditer(r"^\| `?(exercise-[\w-]+)`? \| (?P<keys>[^|]*) \|", path.read_text("utf-8"), re.M):
            found[row[1]] = set(re.findall(r"\b(?:" + "|".join(CATALOGUE) + r")\b", row["keys"]))
    return found


def test_the_catalogue_has_a_hint_in_every_language() -> None:
    assert len(CATALOGUE) == 12
    for lang in LANGUAGES:
        assert set(_language(lang)["mistakes"]) == set(CATALOGUE), lang
    assert all(set(MISTAKES[key]) == set(LANGUAGES) for key in CATALOGUE)


def test_every_case_is_read_and_every_exercise_is_judged() -> None:
    text = "".join(path.read_text(encoding="utf-8") for path in FILES)
    assert len(CASES) == text.count("\n## ")
    assert {case["exercise"] for case in CASES} == set(EXERCISES)
    assert set(_tables()) == set(EXERCISES)
    assert {case["verdict"] for case in CASES} <= {*CATALOGUE, "pass"}


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_an_exercise_recognises_every_mistake_that_can_happen_in_it(exercise: str) -> None:
    """The mistakes the checker declares for an exercise are those the reviewers found can happen in it, and
    each has a wrong answer below that makes it (so each is tried)."""
    declared = EXERCISES[exercise].mistakes
    assert declared == _tables()[exercise]
    tried = {case["verdict"] for case in CASES if case["exercise"] == exercise} - {"pass"}
    assert tried == declared


def test_each_mistake_of_the_catalogue_happens_somewhere() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for exercise in EXERCISES.values():
        for mistake in exercise.mistakes:
            where[mistake].append(exercise.id)
    assert set(where) == set(CATALOGUE)


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{number}-{case['exercise']}-{case['verdict']}" for number, case in enumerate(CASES)],
)
def test_a_mistake_gets_the_catalogues_hint_and_a_right_answer_passes(case: dict[str, str]) -> None:
    namespace: dict[str, object] = {"__name__": "learner"}
    exec(compile(case["source"], f"<{case['file']}: {case['exercise']}>", "exec"), namespace)
    answer = namespace[case["name"]]
    english, chinese = diagnose(case["exercise"], answer, lang="en"), diagnose(case["exercise"], answer, lang="zh")
    if case["verdict"] == "pass":
        assert english, f"{case['why']}\n{english}"
        assert chinese
        return
    assert not english, case["why"]
    assert (english.hint, chinese.hint) == (case["verdict"], case["verdict"]), f"{case['why']}\n{english}"
    # The catalogue's own words, whichever exercise.
    for lang, result in (("en", english), ("zh", chinese)):
        hint = re.sub(r"\s", "", MISTAKES[case["verdict"]][lang])
        assert hint in re.sub(r"\s", "", str(result)), str(result)
