"""Whether what a block printed matches the output shown under it.

Numbers are compared with a tolerance of two units in the last printed digit, so a last-digit
difference between torch versions or BLAS libraries passes while a wrong number fails; everything else
is compared exactly, except for spacing.
"""

from __future__ import annotations

import difflib
import re

from docs_tools.pages import TRACEBACK

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _strip_traceback(text: str) -> str:
    """Drop a shown ``Traceback ...`` header and its ``...`` lines, keeping the exception line."""
    lines = text.rstrip("\n").splitlines()
    if TRACEBACK not in lines:
        return text
    start = lines.index(TRACEBACK)
    return "\n".join([*lines[:start], lines[-1]]) + "\n"


def _ulp(token: str) -> float:
    """One unit in the last printed digit of ``token``, or 0 for an exact (integer-looking) number."""
    mantissa, _, exponent = token.lower().partition("e")
    if "." not in mantissa:
        return 0.0 if not exponent else 10.0 ** int(exponent)
    decimals = len(mantissa.split(".")[1])
    if decimals == 0 and not exponent:
        return 0.0
    return 10.0 ** (int(exponent or 0) - decimals)


def _split(text: str) -> tuple[list[str], list[str]]:
    """The numbers in ``text`` and the text between them, with all whitespace removed."""
    numbers = NUMBER.findall(text)
    words = ["".join(part.split()) for part in NUMBER.split(text)]
    return numbers, words


def compare_output(expected: str, actual: str) -> str | None:
    """``None`` if ``actual`` matches ``expected``, else a message with a diff."""
    expected = _strip_traceback(expected)
    # An exception line may be shown cut short: "RuntimeError: view size is not compatible ..."
    # (the cut may also drop the further lines of a message that spans several).
    shown_last = expected.rstrip("\n").rpartition("\n")[2]
    if shown_last.endswith(" ..."):
        start = ("\n" + actual).rfind("\n" + shown_last[:-4])
        if start != -1:
            actual = actual[:start] + shown_last + "\n"
    want_numbers, want_words = _split(expected)
    got_numbers, got_words = _split(actual)
    problem = None
    if want_words != got_words or len(want_numbers) != len(got_numbers):
        problem = "the printed text differs"
    else:
        for want, got in zip(want_numbers, got_numbers, strict=True):
            tolerance = 2 * _ulp(want)
            if abs(float(want) - float(got)) > tolerance + 1e-12:
                problem = f"{got} differs from the shown {want} by more than {tolerance:g}"
                break
    if problem is None:
        return None
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True), "shown output", "printed output"
        )
    )
    return f"{problem}:\n{diff or repr(actual)}"
