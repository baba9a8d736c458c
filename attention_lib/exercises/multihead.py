"""The exercises of the multi-head attention chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
