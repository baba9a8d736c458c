"""The exercises of the scoring functions chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
