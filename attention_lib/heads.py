"""Splitting one projection into attention heads, and merging the heads back.

Two equivalent layouts:

* [`split_heads`][attention_lib.heads.split_heads] / [`merge_heads`][attention_lib.heads.merge_heads]
  keep heads as their own dimension, ``(batch, num_heads, num_tokens, head_dim)``, as the book's
  ``MultiHeadAttention`` does with ``view`` and ``transpose``;
* [`transpose_qkv`][attention_lib.heads.transpose_qkv] /
  [`transpose_output`][attention_lib.heads.transpose_output] fold the heads into the batch dimension,
  ``(batch * num_heads, num_tokens, head_dim)``, as in *Dive into Deep Learning*, so that 3-D code
  written for one head serves all of them.

Each pair is an exact inverse.
"""

from __future__ import annotations

import torch

from ._checks import check_divisible, check_positive_int, check_tensor


# --8<-- [start:split_heads]
def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Split the last dimension into ``num_heads`` heads and move the heads before the tokens.

    Args:
        x: shape ``(batch, num_tokens, d_out)``.
        num_heads: number of heads; must divide ``d_out``.

    Returns:
        Tensor of shape ``(batch, num_heads, num_tokens, head_dim)`` with
        ``head_dim = d_out // num_heads``; a view of ``x``, no data is copied.
    """
    check_tensor("x", x, ("batch", "num_tokens", "d_out"))
    check_positive_int("num_heads", num_heads)
    b, num_tokens, d_out = x.shape
    head_dim = check_divisible("d_out", d_out, num_heads)
    # (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
    x = x.view(b, num_tokens, num_heads, head_dim)
    # (b, num_tokens, num_heads, head_dim)
    # -> (b, num_heads, num_tokens, head_dim)
    return x.transpose(1, 2)


# --8<-- [end:split_heads]


# --8<-- [start:merge_heads]
def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Undo [`split_heads`][attention_lib.heads.split_heads]: put the heads side by side in the last dimension.

    Args:
        x: shape ``(batch, num_heads, num_tokens, head_dim)``.

    Returns:
        Tensor of shape ``(batch, num_tokens, num_heads * head_dim)``.
    """
    check_tensor("x", x, ("batch", "num_heads", "num_tokens", "head_dim"))
    b, num_heads, num_tokens, head_dim = x.shape
    # (b, num_heads, num_tokens, head_dim)
    # -> (b, num_tokens, num_heads, head_dim)
    x = x.transpose(1, 2)
    # After transpose the memory is no longer laid out row by row, and view
    # cannot reinterpret it: contiguous() copies it into that order first.
    # -> (b, num_tokens, d_out)
    return x.contiguous().view(b, num_tokens, num_heads * head_dim)


# --8<-- [end:merge_heads]


# --8<-- [start:transpose_qkv]
def transpose_qkv(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Split into heads and fold the heads into the batch dimension (*Dive into Deep Learning*).

    Args:
        x: shape ``(batch, num_tokens, num_hiddens)``.
        num_heads: number of heads; must divide ``num_hiddens``.

    Returns:
        Tensor of shape ``(batch * num_heads, num_tokens, num_hiddens // num_heads)``; the rows of
        sequence ``i`` are ``i * num_heads`` to ``(i + 1) * num_heads - 1``.
    """
    check_tensor("x", x, ("batch", "num_tokens", "num_hiddens"))
    check_positive_int("num_heads", num_heads)
    b, num_tokens, num_hiddens = x.shape
    head_dim = check_divisible("num_hiddens", num_hiddens, num_heads)
    # (b, t, num_hiddens) -> (b, t, num_heads, head_dim)
    x = x.reshape(b, num_tokens, num_heads, head_dim)
    # (b, t, num_heads, head_dim) -> (b, num_heads, t, head_dim)
    x = x.permute(0, 2, 1, 3)
    # -> (b * num_heads, t, head_dim)
    return x.reshape(b * num_heads, num_tokens, head_dim)


# --8<-- [end:transpose_qkv]


# --8<-- [start:transpose_output]
def transpose_output(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Undo [`transpose_qkv`][attention_lib.heads.transpose_qkv].

    Args:
        x: shape ``(batch * num_heads, num_tokens, head_dim)``.
        num_heads: the number of heads folded into the first dimension.

    Returns:
        Tensor of shape ``(batch, num_tokens, num_heads * head_dim)``.
    """
    check_tensor("x", x, ("batch * num_heads", "num_tokens", "head_dim"))
    check_positive_int("num_heads", num_heads)
    folded, num_tokens, head_dim = x.shape
    if folded % num_heads != 0:
        raise ValueError(
            f"the first dimension of x ({folded}) must be a multiple of num_heads ({num_heads})"
        )
    # -> (b, num_heads, t, head_dim)
    x = x.reshape(folded // num_heads, num_heads, num_tokens, head_dim)
    # (b, num_heads, t, head_dim) -> (b, t, num_heads, head_dim)
    x = x.permute(0, 2, 1, 3)
    # -> (b, t, num_hiddens)
    return x.reshape(x.shape[0], num_tokens, num_heads * head_dim)


# --8<-- [end:transpose_output]
