"""Check your answers to the pages' exercises.

    from attention_exercises import check

    def stable_softmax(x):
        ...

    check("exercise-stable-softmax", stable_softmax)

The id is the exercise's heading id on the page. ``check`` runs your function
or module against attention_lib on random inputs and prints either ✓ and what
it checked, or the first thing that went wrong with a hint; the typical wrong
answers (the pitfalls the pages describe) each get a hint of their own.
``set_language("zh")`` makes every later message Chinese.

Your code cannot take the session down with it: each call of it has a time
limit (``set_time_limit``), an exception or ``exit()`` in it is a ✗, and
torch's global settings (default dtype and device, autograd, threads,
deterministic algorithms) and random state are as before once ``check``
returns.
"""

from __future__ import annotations

import difflib
import html
import re
import sys
from typing import Any

from . import (
    backends,
    buffers,
    cross,
    dropout,
    equivalence,
    foundations,
    grouped_query,
    kv_cache,
    masks_beyond,
    multihead,
    pitfalls,
    positions,
    real_model,
    scoring,
    self_attention,
    tiles,
    why_attention,
)
from ._core import (
    Exercise,
    Result,
    WrongAnswerError,
    broke,
    message,
    say,
    stopped,
)
from ._guard import isolated, set_time_limit
from ._messages import LANGUAGES, messages
from ._rules import ruling

# In the order of the chapters.
_CHAPTERS = [
    why_attention,
    foundations,
    self_attention,
    scoring,
    dropout,
    buffers,
    multihead,
    cross,
    equivalence,
    pitfalls,
    kv_cache,
    grouped_query,
    backends,
    tiles,
    positions,
    masks_beyond,
    real_model,
]

#: Every exercise ``check`` knows, by its id.
EXERCISES: dict[str, Exercise] = {
    exercise.id: exercise
    for chapter in _CHAPTERS
    for exercise in chapter.EXERCISES
}


#: What ``check`` says of a call it cannot make, in every language.
_ERRORS = messages("errors")

#: The language of the messages (``set_language``).
_language = ["en"]


def set_language(lang: str) -> None:
    """Say every later ✓ and ✗ in ``lang``: ``"en"`` (the default) or
    ``"zh"``, one of `LANGUAGES`."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    _language[0] = lang


def diagnose(exercise: str, answer: Any, lang: str | None = None) -> Result:
    """Check ``answer`` for ``exercise`` and return the `Result`.

    Args:
        exercise: the exercise's heading id, such as
            ``"exercise-stable-softmax"``.
        answer: your function or module class, under the name the
            exercise asks for.
        lang: the language of the message, one of `LANGUAGES`; by default
            the one ``set_language`` set.

    Returns:
        A `Result`: true when every check passed; ``str()`` of it is the
        message ``check`` prints, and ``hint`` names the hint given.
    """
    if lang is None:
        lang = _language[0]
    elif lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    if exercise not in EXERCISES:
        # A typo in the id is a learner's likeliest first mistake: say it
        # in their language, with the nearest id.
        known = ", ".join(sorted(EXERCISES))
        text = say(
            _ERRORS, "unknown_exercise", lang, known=known, got=exercise
        )
        close = difflib.get_close_matches(str(exercise), EXERCISES, n=1)
        if close:
            text += say(_ERRORS, "did_you_mean", lang, close=close[0])
        raise ValueError(text)
    spec = EXERCISES[exercise]
    if not callable(answer):
        failure = WrongAnswerError(
            "missing", "define", got=type(answer).__name__
        )
        return message(spec, lang, [], failure)
    try:
        with isolated(), ruling(spec.rules) as later:
            checked = spec.run(answer)
            if later:  # the results are right; how they were made is not
                raise broke(later[0])
    except WrongAnswerError as wrong:
        return message(spec, lang, [], wrong)
    except SystemExit as error:  # from the answer's result, as it is judged
        return message(spec, lang, [], stopped(error))
    return message(spec, lang, checked, None)


def check(exercise: str, answer: Any, lang: str | None = None) -> Result:
    """Check ``answer`` for ``exercise``, show what was found and return it
    (see `diagnose`): true on ✓, so that ``assert check(...)`` stops a
    script at a wrong answer.

    In a Jupyter notebook the hint of a ✗ is folded, for the reader to open
    when stuck, and the returned result is not shown a second time."""
    result = diagnose(exercise, answer, lang)
    shell = _kernel()
    if shell is None:
        print(result)
        return result
    # The display IPython's own display() makes, without importing IPython,
    # which the checker does not depend on.
    data = {"text/plain": str(result), "text/html": _html(result)}
    shell.display_pub.publish(data=data, metadata={})
    return _Shown(**vars(result))


class _Shown(Result):
    """A result that `check` has shown: a notebook does not show it again
    when it is the cell's last expression."""

    def _ipython_display_(self) -> None:
        pass


def _kernel() -> Any:
    """The Jupyter kernel's shell the code runs in, or ``None`` (a script;
    IPython's terminal, which prints as a script does)."""
    ipython = sys.modules.get("IPython")
    shell = None if ipython is None else ipython.get_ipython()
    return shell if hasattr(shell, "kernel") else None


def _html(result: Result) -> str:
    """The result as a notebook shows it: the message, and the hint folded
    under a summary that names it."""
    body = str(result)
    if result.tip:
        body = body[: -len(result.tip)].rstrip("\n")
    shown = f"<pre>{html.escape(body)}</pre>"
    if not result.tip:
        return shown
    # The label the hint starts with, "Hint" or "提示".
    summary = re.split("[:：]", result.tip.strip(), maxsplit=1)[0]
    return (
        f"{shown}<details><summary>{html.escape(summary)}</summary>"
        f"<pre>{html.escape(result.tip)}</pre></details>"
    )


__version__ = "0.4.0"

__all__ = [
    "EXERCISES",
    "LANGUAGES",
    "Result",
    "check",
    "diagnose",
    "set_language",
    "set_time_limit",
]
