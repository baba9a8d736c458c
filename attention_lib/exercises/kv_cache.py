"""The exercises of the the KV cache chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
