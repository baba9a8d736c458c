"""Head splitting: both layouts, their inverses, and why contiguous() is needed."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al

shapes = st.tuples(st.integers(1, 4), st.integers(1, 9), st.integers(1, 6), st.integers(1, 5))


@given(shapes)
def test_split_then_merge_is_identity(shape: tuple[int, int, int, int]) -> None:
    b, t, num_heads, head_dim = shape
    x = torch.randn(b, t, num_heads * head_dim)
    heads = al.split_heads(x, num_heads)
    assert heads.shape == (b, num_heads, t, head_dim)
    assert torch.equal(al.merge_heads(heads), x)


@given(shapes)
def test_transpose_qkv_then_output_is_identity(shape: tuple[int, int, int, int]) -> None:
    b, t, num_heads, head_dim = shape
    x = torch.randn(b, t, num_heads * head_dim)
    folded = al.transpose_qkv(x, num_heads)
    assert folded.shape == (b * num_heads, t, head_dim)
    assert torch.equal(al.transpose_output(folded, num_heads), x)


@given(shapes)
def test_both_layouts_hold_the_same_heads(shape: tuple[int, int, int, int]) -> None:
    b, t, num_heads, head_dim = shape
    x = torch.randn(b, t, num_heads * head_dim)
    heads = al.split_heads(x, num_heads)
    folded = al.transpose_qkv(x, num_heads)
    assert torch.equal(folded.view(b, num_heads, t, head_dim), heads)


def test_head_h_is_column_block_h() -> None:
    x = torch.arange(2 * 3 * 6, dtype=torch.float32).view(2, 3, 6)
    heads = al.split_heads(x, num_heads=3)
    for h in range(3):
        assert torch.equal(heads[:, h], x[..., 2 * h : 2 * h + 2])


def test_split_is_a_view_and_merge_needs_contiguous() -> None:
    x = torch.randn(2, 4, 6)
    heads = al.split_heads(x, 2)
    assert heads.data_ptr() == x.data_ptr()  # no copy
    assert not heads.is_contiguous()
    # The attention output is a fresh (b, num_heads, t, head_dim) tensor; once transposed, its memory
    # is not in (b, t, d_out) order and view cannot reinterpret it. merge_heads copies first.
    context_vec = heads @ torch.eye(3)
    assert context_vec.is_contiguous()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        context_vec.transpose(1, 2).view(2, 4, 6)
    merged = al.merge_heads(context_vec)
    assert merged.is_contiguous()
    torch.testing.assert_close(merged, x)


def test_view_without_transpose_mixes_tokens() -> None:
    """The classic bug: viewing straight to (b, heads, t, head_dim) scrambles tokens and heads."""
    x = torch.randn(1, 4, 6)
    wrong = x.view(1, 2, 4, 3)
    assert not torch.equal(wrong, al.split_heads(x, 2))
