"""The exercises of the dropout chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
