"""Causal (masked) self-attention: each token attends only to itself and the tokens before it."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import (
    check_dropout,
    check_num_tokens,
    check_positive_int,
    check_tensor,
)
from .masks import causal_mask, masked_softmax, refill_causal_mask


# --8<-- [start:CausalAttention]
class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout (the book's class).

    The causal mask is computed once for ``context_length`` tokens and
    registered as a buffer named ``mask``: a buffer moves with the module on
    ``.to(device)`` (a plain tensor attribute would stay behind on the CPU),
    but is not a trainable parameter. It is registered with
    ``persistent=False``, so it is **not** part of ``state_dict()``: it is
    fully determined by ``context_length``, and leaving it out keeps
    checkpoints free of ``context_length**2`` redundant values. It is boolean
    (True = masked out), so ``.to(dtype)`` leaves it boolean, as it should.

    Args:
        d_in: size of each input vector.
        d_out: size of queries, keys, values and context vectors.
        context_length: the largest number of tokens the module accepts.
        dropout: probability of zeroing an attention weight during training, in
            [0, 1).
        qkv_bias: whether the three projections have a bias.

    Shape:
        - Input ``x``: ``(batch, num_tokens, d_in)``, with
          ``num_tokens <= context_length``.
        - Output: ``(batch, num_tokens, d_out)``.
    """

    mask: torch.Tensor

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out = check_positive_int("d_out", d_out)
        self.context_length = check_positive_int(
            "context_length", context_length
        )
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.register_buffer(
            "mask", causal_mask(context_length), persistent=False
        )
        # Not in the state dict, so no load writes it: write it after each one
        # (after to_empty() on a module built on "meta", it is garbage).
        self.register_load_state_dict_post_hook(refill_causal_mask)

    def reset_parameters(self) -> None:
        for linear in (self.W_query, self.W_key, self.W_value):
            linear.reset_parameters()
        refill_causal_mask(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Causal context vectors of ``x``, ``(batch, num_tokens, d_out)``."""
        check_tensor(
            "x",
            x,
            ("batch", "num_tokens", "d_in"),
            last_dim=self.d_in,
            like=self,
        )
        num_tokens = x.shape[1]
        check_num_tokens(num_tokens, self.context_length)
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        # (b, num_tokens, d_out) @ (b, d_out, num_tokens)
        attn_scores = queries @ keys.transpose(1, 2)
        # The buffer covers context_length tokens; shorter inputs use its
        # top-left corner.
        mask = self.mask[:num_tokens, :num_tokens]
        attn_weights = masked_softmax(
            attn_scores / keys.shape[-1] ** 0.5, mask
        )
        attn_weights = self.dropout(attn_weights)
        # (b, num_tokens, num_tokens) @ (b, num_tokens, d_out)
        context_vec = attn_weights @ values
        return context_vec


# --8<-- [end:CausalAttention]
