"""The answers in learners_answers.md, written by a reviewer who saw neither the checker nor its tests: each right
one passes, each wrong one fails with its hint, in both languages. Kept as found, so that a change to a check that
turns any of them around fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from attention_exercises import EXERCISES, diagnose

ANSWERS = Path(__file__).with_name("learners_answers.md")
CASE = re.compile(
    r"^## (?P<exercise>exercise-[\w-]+) · (?P<verdict>\w+) · (?P<kind>\w+) · `(?P<name>\w+)`\n\n"
    r"(?P<why>.+?)\n\n```python\n(?P<source>.*?)^```$",
    re.M | re.S,
)
CASES = [match.groupdict() for match in CASE.finditer(ANSWERS.read_text(encoding="utf-8"))]
KINDS = {"right", "state", "inputs", "gradients", "rule", "random"}


def test_every_case_is_read_and_every_exercise_has_some() -> None:
    assert len(CASES) == ANSWERS.read_text(encoding="utf-8").count("\n## ")
    assert {case["kind"] for case in CASES} == KINDS
    assert {case["exercise"] for case in CASES} == set(EXERCISES)
    # Both ways round, for every class of mistake.
    assert sum(case["verdict"] == "pass" for case in CASES) >= 90
    for kind in KINDS - {"right"}:
        assert sum(case["kind"] == kind and case["verdict"] != "pass" for case in CASES) >= 3, kind


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{number}-{case['exercise']}-{case['verdict']}" for number, case in enumerate(CASES)],
)
def test_a_learners_answer_gets_its_verdict_and_hint(case: dict[str, str]) -> None:
    def answer() -> object:
        # Defined afresh for each language, as a learner runs it: an answer that keeps state between calls
        # starts from nothing each time.
        namespace: dict[str, object] = {"__name__": "learner"}
        exec(compile(case["source"], f"<{case['exercise']}>", "exec"), namespace)
        return namespace[case["name"]]

    english, chinese = diagnose(case["exercise"], answer(), lang="en"), diagnose(case["exercise"], answer(), lang="zh")
    if case["verdict"] in ("pass", "shares"):
        assert english, f"{case['why']}\n{english}"
        assert chinese
        assert ("shares memory" in str(english)) == (case["verdict"] == "shares"), str(english)
    else:
        assert not english, case["why"]
        assert (english.hint, chinese.hint) == (case["verdict"], case["verdict"]), f"{case['why']}\n{english}"


def test_a_loop_in_a_helper_from_another_cell_breaks_the_rule() -> None:
    """A notebook compiles each cell under its own file name: a loop in a helper defined in an earlier cell runs in
    the reader's code all the same."""
    namespace: dict[str, object] = {}
    cells = [
        "import torch\n\ndef rows(queries, keys):\n    return torch.stack([keys @ query for query in queries])\n",
        "def all_scores(queries, keys):\n    return rows(queries, keys)\n",
    ]
    for number, cell in enumerate(cells, start=1):
        exec(compile(cell, f"/tmp/ipykernel_1/{number}.py", "exec"), namespace)
    assert diagnose("exercise-all-scores", namespace["all_scores"]).hint == "rule_loop"
