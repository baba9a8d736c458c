"""The annotations tell the truth: what a forward's overloads declare is what it returns.

mypy (python3 dev.py lint) checks that the overloads agree with the implementation; these tests check that they
say what the code does, at run time, so that they hold for the installed wheel too. How a type checker resolves
a call is checked in tests/tooling/test_type_checking.py.
"""

from __future__ import annotations

import sys
import typing
from typing import Literal

import pytest
import torch

import attention_lib as al

ONE_OR_BOTH = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.get_overloads is new in Python 3.11")
def test_multi_head_attention_declares_what_need_weights_returns() -> None:
    """Literal[False] (the default) gives a tensor, Literal[True] a pair, and a bool known only at run time
    either; in that order, since a type checker takes the first overload that matches."""
    overloads = typing.get_overloads(al.MultiHeadAttention.forward)
    declared = [
        (hints["need_weights"], hints["return"])
        for hints in (typing.get_type_hints(overload) for overload in overloads)
    ]
    assert declared == [
        (Literal[False], torch.Tensor),
        (Literal[True], tuple[torch.Tensor, torch.Tensor]),
        (bool, ONE_OR_BOTH),
    ]
    # The implementation returns the union of what the overloads return.
    assert typing.get_type_hints(al.MultiHeadAttention.forward)["return"] == ONE_OR_BOTH


@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
def test_multi_head_attention_returns_what_its_overloads_declare(use_sdpa: bool) -> None:
    torch.manual_seed(0)
    mha = al.MultiHeadAttention(4, 6, 8, 0.0, num_heads=2, use_sdpa=use_sdpa)
    x = torch.randn(2, 5, 4)
    for output in (mha(x), mha(x, need_weights=False), mha.forward(x)):
        assert type(output) is torch.Tensor
        assert output.shape == (2, 5, 6)
    for output in (mha(x, need_weights=True), mha(x, None, True), mha.forward(x, need_weights=True)):
        assert type(output) is tuple
        context_vec, attn_weights = output
        assert type(context_vec) is torch.Tensor
        assert type(attn_weights) is torch.Tensor
        assert (context_vec.shape, attn_weights.shape) == ((2, 5, 6), (2, 2, 5, 5))
