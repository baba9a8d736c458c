"""Scaled dot-product attention over separate queries, keys and values with valid lengths.

This is the *Dive into Deep Learning* formulation: the module has no projections of its own and
takes ``valid_lens`` instead of a mask, so it serves as the attention inside encoder–decoder models
and inside [`GeneralMultiHeadAttention`][attention_lib.general_multihead.GeneralMultiHeadAttention].
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_dropout, check_qkv, valid_lens_mask
from .masks import masked_softmax


# --8<-- [start:DotProductAttention]
class DotProductAttention(nn.Module):
    """Scaled dot-product attention with valid lengths; keeps the last weights for plotting.

    Keys past a sequence's valid length get exactly zero weight. A query with valid length 0 gets a
    context vector of zeros (the book's version, which fills with ``-1e6``, spreads its weight
    uniformly over the padding instead).

    Args:
        dropout: dropout probability on the attention weights, in [0, 1).

    Shape:
        - Input ``queries``: ``(batch, num_queries, d)``.
        - Input ``keys``: ``(batch, num_keys, d)``.
        - Input ``values``: ``(batch, num_keys, value_size)``.
        - Input ``valid_lens``: ``(batch,)`` or ``(batch, num_queries)``, or ``None`` for no padding.
        - Output: ``(batch, num_queries, value_size)``.
        - Attribute ``attention_weights``: ``(batch, num_queries, num_keys)``, before dropout.
    """

    attention_weights: torch.Tensor | None

    def __init__(self, dropout: float) -> None:
        super().__init__()
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
        if queries.shape[-1] != keys.shape[-1]:
            raise ValueError(
                f"queries and keys must have the same size for a dot product, got "
                f"{queries.shape[-1]} and {keys.shape[-1]}"
            )
        mask = valid_lens_mask(valid_lens, queries, keys)
        d = queries.shape[-1]
        # (b, q, d) @ (b, d, k) -> (b, q, k)
        attn_scores = queries @ keys.transpose(1, 2) / d**0.5
        self.attention_weights = masked_softmax(attn_scores, mask)
        # (b, q, k) @ (b, k, v) -> (b, q, v)
        return self.dropout(self.attention_weights) @ values


# --8<-- [end:DotProductAttention]
