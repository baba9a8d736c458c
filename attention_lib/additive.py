"""Additive (Bahdanau) attention: queries and keys of different sizes, scored by a small network."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import (
    check_dropout,
    check_positive_int,
    check_qkv,
    valid_lens_mask,
)
from .masks import masked_softmax
from .scoring import additive_scores


# --8<-- [start:AdditiveAttention]
class AdditiveAttention(nn.Module):
    """Additive attention with valid lengths (*Dive into Deep Learning*); keeps the last weights.

    The score of a query ``q`` and key ``k`` is ``w_vᵀ tanh(W_q q + W_k k)``
    ([`additive_scores`][attention_lib.scoring.additive_scores]). Layers are
    created in the book's order ``W_k``, ``W_q``, ``w_v``, all without bias.

    Args:
        key_size: size of each key.
        query_size: size of each query.
        num_hiddens: size of the hidden layer.
        dropout: dropout probability on the attention weights, in [0, 1).

    Shape:
        - Input ``queries``: ``(batch, num_queries, query_size)``.
        - Input ``keys``: ``(batch, num_keys, key_size)``.
        - Input ``values``: ``(batch, num_keys, value_size)``.
        - Input ``valid_lens``: ``(batch,)`` or ``(batch, num_queries)``, or
          ``None``.
        - Output: ``(batch, num_queries, value_size)``.
        - Attribute ``attention_weights``: ``(batch, num_queries,
          num_keys)``, before dropout.
    """

    attention_weights: torch.Tensor | None

    def __init__(
        self, key_size: int, query_size: int, num_hiddens: int, dropout: float
    ) -> None:
        super().__init__()
        check_positive_int("key_size", key_size)
        check_positive_int("query_size", query_size)
        check_positive_int("num_hiddens", num_hiddens)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.attention_weights = None

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Context vectors, ``(batch, num_queries, value_size)``; keeps the weights."""
        check_qkv(queries, keys, values)
        mask = valid_lens_mask(valid_lens, queries, keys)
        attn_scores = additive_scores(
            queries, keys, self.W_q.weight, self.W_k.weight, self.w_v.weight
        )
        self.attention_weights = masked_softmax(attn_scores, mask)  # (b, q, k)
        # (b, q, k) @ (b, k, v) -> (b, q, v)
        return self.dropout(self.attention_weights) @ values


# --8<-- [end:AdditiveAttention]
