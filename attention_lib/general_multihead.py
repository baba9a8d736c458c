"""Multi-head attention over separate queries, keys and values (*Dive into Deep Learning*)."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import (
    check_divisible,
    check_positive_int,
    check_qkv,
    check_valid_lens,
)
from .dot_product import DotProductAttention
from .heads import transpose_output, transpose_qkv


# --8<-- [start:GeneralMultiHeadAttention]
class GeneralMultiHeadAttention(nn.Module):
    """Multi-head attention over three inputs: queries, keys and values.

    Each input has its own projection (``W_q`` for queries, ``W_k`` for keys,
    ``W_v`` for values) to ``num_hiddens``; the heads are folded into the batch
    dimension ([`transpose_qkv`][attention_lib.heads.transpose_qkv]) so that
    one [`DotProductAttention`][attention_lib.dot_product.DotProductAttention]
    call serves all heads, then unfolded
    ([`transpose_output`][attention_lib.heads.transpose_output]) and mixed by
    ``W_o``. Layers are created in the book's order ``W_q``, ``W_k``, ``W_v``,
    ``W_o``.

    Args:
        key_size: size of each key input.
        query_size: size of each query input.
        value_size: size of each value input.
        num_hiddens: size of the projections and of the output; must be
            divisible by ``num_heads``.
        num_heads: number of heads.
        dropout: dropout probability on the attention weights, in [0, 1).
        bias: whether the four projections have a bias.

    Shape:
        - Input ``queries``: ``(batch, num_queries, query_size)``.
        - Input ``keys``: ``(batch, num_keys, key_size)``.
        - Input ``values``: ``(batch, num_keys, value_size)``.
        - Input ``valid_lens``: ``(batch,)`` or ``(batch, num_queries)``, or
          ``None``.
        - Output: ``(batch, num_queries, num_hiddens)``.
        - Attribute ``attention_weights``: ``(batch * num_heads, num_queries,
          num_keys)``.
    """

    def __init__(
        self,
        key_size: int,
        query_size: int,
        value_size: int,
        num_hiddens: int,
        num_heads: int,
        dropout: float,
        bias: bool = False,
    ) -> None:
        super().__init__()
        for name, size in (
            ("key_size", key_size),
            ("query_size", query_size),
            ("value_size", value_size),
        ):
            check_positive_int(name, size)
        check_positive_int("num_hiddens", num_hiddens)
        self.num_heads = check_positive_int("num_heads", num_heads)
        check_divisible("num_hiddens", num_hiddens, num_heads)
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    @property
    def attention_weights(self) -> torch.Tensor | None:
        return self.attention.attention_weights

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Context vectors of all heads, mixed: ``(batch, num_queries, num_hiddens)``."""
        check_qkv(queries, keys, values)
        if valid_lens is not None:
            # Checked here, against the caller's shapes, before the heads are
            # folded into the batch.
            check_valid_lens(
                valid_lens, queries.shape[0], queries.shape[1], keys.shape[1]
            )
        # (b, q, num_hiddens) -> (b * h, q, head_dim)
        queries = transpose_qkv(self.W_q(queries), self.num_heads)
        # (b, k, num_hiddens) -> (b * h, k, head_dim)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)
        # (b, k, num_hiddens) -> (b * h, k, head_dim)
        values = transpose_qkv(self.W_v(values), self.num_heads)
        if valid_lens is not None:
            # Every head of sequence i sees the lengths of sequence i: (b, ...)
            # -> (b * h, ...), each h times in place, the order transpose_qkv
            # folds the heads in (repeat would tile the batch instead).
            valid_lens = torch.repeat_interleave(
                valid_lens, repeats=self.num_heads, dim=0
            )
        # (b * h, q, head_dim)
        output = self.attention(queries, keys, values, valid_lens)
        # (b * h, q, head_dim) -> (b, q, num_hiddens)
        output_concat = transpose_output(output, self.num_heads)
        return self.W_o(output_concat)


# --8<-- [end:GeneralMultiHeadAttention]
