"""The exercises of the attention backends chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
