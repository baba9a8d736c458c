"""The exercises of the grouped-query attention chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
