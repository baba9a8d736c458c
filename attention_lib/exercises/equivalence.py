"""The exercises of the from scratch to PyTorch (pytorch-equivalence) chapter."""

from __future__ import annotations

from ._core import Exercise

EXERCISES: list[Exercise] = []
