"""Self-attention with trainable weights: the book's ``SelfAttention_v1`` and ``SelfAttention_v2``."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int, check_tensor


# --8<-- [start:SelfAttentionV1]
class SelfAttentionV1(nn.Module):
    """Scaled dot-product self-attention with raw ``nn.Parameter`` weights.

    The weights are drawn from ``torch.rand`` (uniform on [0, 1)), in the order
    ``W_query``, ``W_key``, ``W_value``, so that ``torch.manual_seed(123)``
    reproduces the book's printed values.

    Args:
        d_in: size of each input vector.
        d_out: size of queries and keys (they are compared by a dot product, so
            they share a size).
        d_out_v: size of values and of the output context vectors; defaults to
            ``d_out``.

    Shape:
        - Input ``x``: ``(num_tokens, d_in)`` or ``(batch, num_tokens, d_in)``.
        - Output: ``(num_tokens, d_out_v)`` or ``(batch, num_tokens,
          d_out_v)``.
    """

    def __init__(
        self, d_in: int, d_out: int, d_out_v: int | None = None
    ) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out = check_positive_int("d_out", d_out)
        self.d_out_v = (
            d_out
            if d_out_v is None
            else check_positive_int("d_out_v", d_out_v)
        )
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, self.d_out_v))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Context vectors of ``x``, ``(..., num_tokens, d_out_v)``."""
        check_tensor(
            "x",
            x,
            ("batch", "num_tokens", "d_in"),
            last_dim=self.d_in,
            allow_unbatched=True,
            like=self,
        )
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        # (..., num_tokens, num_tokens)
        attn_scores = queries @ keys.transpose(-2, -1)
        # Dividing by sqrt(d_out) keeps the scores' spread independent of the
        # key size.
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1] ** 0.5, dim=-1
        )
        context_vec = attn_weights @ values
        return context_vec


# --8<-- [end:SelfAttentionV1]


# --8<-- [start:SelfAttentionV2]
class SelfAttentionV2(nn.Module):
    """Self-attention with ``nn.Linear`` projections.

    The same computation as
    [`SelfAttentionV1`][attention_lib.self_attention.SelfAttentionV1].

    ``nn.Linear`` stores its weight transposed (``d_out x d_in``) and
    initializes it with a scaled uniform distribution that suits training
    better than ``torch.rand``; with ``qkv_bias`` it adds a bias.
    ``SelfAttentionV1`` with ``W_query = linear.weight.T`` (and no bias)
    computes the same.

    Args:
        d_in: size of each input vector.
        d_out: size of queries, keys, values and context vectors.
        qkv_bias: whether the three projections have a bias.

    Shape:
        - Input ``x``: ``(num_tokens, d_in)`` or ``(batch, num_tokens, d_in)``.
        - Output: ``(num_tokens, d_out)`` or ``(batch, num_tokens, d_out)``.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out = check_positive_int("d_out", d_out)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Context vectors of ``x``, ``(..., num_tokens, d_out)``."""
        check_tensor(
            "x",
            x,
            ("batch", "num_tokens", "d_in"),
            last_dim=self.d_in,
            allow_unbatched=True,
            like=self,
        )
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        # (..., num_tokens, num_tokens)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1] ** 0.5, dim=-1
        )
        context_vec = attn_weights @ values
        return context_vec


# --8<-- [end:SelfAttentionV2]
