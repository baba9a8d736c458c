"""Cross-attention: queries from one sequence, keys and values from another."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int, check_tensor


# --8<-- [start:CrossAttention]
class CrossAttention(nn.Module):
    """Scaled dot-product attention of ``x_1`` over ``x_2``.

    ``x_1`` gives the queries, ``x_2`` the keys and values.

    The two sequences may have different lengths but share the embedding size
    ``d_in``. Setting ``x_2 = x_1`` gives self-attention. The weights are
    ``nn.Parameter(torch.rand(...))`` created in the order ``W_query``,
    ``W_key``, ``W_value``, as in the article's ``CrossAttention``.

    Args:
        d_in: size of each input vector of both sequences.
        d_out_kq: size of queries and keys.
        d_out_v: size of values and context vectors.

    Shape:
        - Input ``x_1``: ``(num_queries, d_in)`` or
          ``(batch, num_queries, d_in)``.
        - Input ``x_2``: ``(num_keys, d_in)`` or ``(batch, num_keys, d_in)``.
        - Output: ``(num_queries, d_out_v)`` or
          ``(batch, num_queries, d_out_v)``.
    """

    def __init__(self, d_in: int, d_out_kq: int, d_out_v: int) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out_kq = check_positive_int("d_out_kq", d_out_kq)
        self.d_out_v = check_positive_int("d_out_v", d_out_v)
        self.W_query = nn.Parameter(torch.rand(d_in, d_out_kq))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out_kq))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out_v))

    def forward(self, x_1: torch.Tensor, x_2: torch.Tensor) -> torch.Tensor:
        """Context vectors of ``x_1``'s queries over ``x_2``, ``(..., num_queries, d_out_v)``."""
        dims = ("batch", "num_tokens", "d_in")
        check_tensor(
            "x_1",
            x_1,
            dims,
            last_dim=self.d_in,
            allow_unbatched=True,
            like=self,
        )
        check_tensor(
            "x_2",
            x_2,
            dims,
            last_dim=self.d_in,
            allow_unbatched=True,
            like=self,
        )
        if x_1.shape[:-2] != x_2.shape[:-2]:
            raise ValueError(
                "x_1 and x_2 must have the same batch dimensions, got shapes "
                f"{tuple(x_1.shape)} and {tuple(x_2.shape)}"
            )
        queries_1 = x_1 @ self.W_query
        keys_2 = x_2 @ self.W_key
        values_2 = x_2 @ self.W_value
        # (..., num_queries, num_keys)
        attn_scores = queries_1 @ keys_2.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / self.d_out_kq**0.5, dim=-1)
        context_vec = attn_weights @ values_2  # (..., num_queries, d_out_v)
        return context_vec


# --8<-- [end:CrossAttention]
