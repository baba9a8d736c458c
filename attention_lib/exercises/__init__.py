"""Check your answers to the pages' exercises.

    from attention_lib.exercises import check

    def stable_softmax(x):
        ...

    check("exercise-stable-softmax", stable_softmax)

The id is the exercise's heading id on the page. ``check`` runs your function
or module against attention_lib on random inputs and prints either ✓ and what
it checked, or the first thing that went wrong with a hint; the typical wrong
answers (the pitfalls the pages describe) each get a hint of their own.
``lang="zh"`` answers in Chinese.
"""

from __future__ import annotations

from typing import Any

import torch

from . import (
    backends,
    buffers,
    cross,
    dropout,
    equivalence,
    foundations,
    grouped_query,
    kv_cache,
    multihead,
    scoring,
    self_attention,
)
from ._core import LANGUAGES, Exercise, Result, WrongAnswerError, message

# In the order of the chapters.
_CHAPTERS = [
    foundations,
    self_attention,
    scoring,
    dropout,
    buffers,
    multihead,
    cross,
    equivalence,
    kv_cache,
    grouped_query,
    backends,
]

#: Every exercise ``check`` knows, by its id.
EXERCISES: dict[str, Exercise] = {
    exercise.id: exercise
    for chapter in _CHAPTERS
    for exercise in chapter.EXERCISES
}


def diagnose(exercise: str, answer: Any, lang: str = "en") -> Result:
    """Check ``answer`` for ``exercise`` and return the `Result`.

    Args:
        exercise: the exercise's heading id, such as
            ``"exercise-stable-softmax"``.
        answer: your function or module class, under the name the
            exercise asks for.
        lang: ``"en"`` or ``"zh"``, the language of the message.

    Returns:
        A `Result`: true when every check passed; ``str()`` of it is the
        message ``check`` prints, and ``hint`` names the hint given.
    """
    if exercise not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise ValueError(
            f"exercise must be the id of an exercise, one of {known}; "
            f"got {exercise!r}"
        )
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    spec = EXERCISES[exercise]
    if not callable(answer):
        failure = WrongAnswerError(
            "missing", "define", got=type(answer).__name__
        )
        return message(spec, lang, [], failure)
    # The checks seed torch's generator: the reader's own random state is
    # left as it was.
    with torch.random.fork_rng(devices=[]):
        try:
            checked = spec.run(answer)
        except WrongAnswerError as failure:
            return message(spec, lang, [], failure)
    return message(spec, lang, checked, None)


def check(exercise: str, answer: Any, lang: str = "en") -> None:
    """Check ``answer`` for ``exercise`` and print what was found (see
    `diagnose`, which returns it)."""
    print(diagnose(exercise, answer, lang))


__all__ = ["EXERCISES", "Result", "check", "diagnose"]
