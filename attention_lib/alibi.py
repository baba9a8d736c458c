"""ALiBi: attention with linear biases instead of position embeddings.

ALiBi (Press, Smith and Lewis, *Train Short, Test Long*, 2022) adds no
position embedding to the tokens. Each head ``h`` instead adds
``-slope[h] * distance`` to the score of a key ``distance`` positions before
the query, so that far keys are penalized linearly, more steeply in the
first heads than in the last ones. The slopes are a geometric sequence fixed
before training
([`alibi_slopes`][attention_lib.alibi.alibi_slopes]).

Two ways to apply it, which agree:

- an additive bias tensor, ``(num_heads, num_queries, num_keys)``, added to
  the scaled scores before the (causal) softmax, which any attention takes:
  a float ``attn_mask`` of ``scaled_dot_product_attention`` adds it;
- a FlexAttention ``score_mod``, ``score_mod(score, b, h, q_idx, kv_idx)``,
  which computes the same bias for each score inside the kernel, so that the
  tensor is never built.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._checks import (
    check_non_negative_int,
    check_num_keys,
    check_positive_int,
)

#: ``score_mod(score, b, h, q_idx, kv_idx) -> new score``, as ``flex_attention`` takes.
ScoreMod = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    torch.Tensor,
]


# --8<-- [start:alibi_slopes]
def alibi_slopes(
    num_heads: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """The standard ALiBi slope of each head.

    For ``n`` heads, ``n`` a power of 2, the slopes are ``2^(-8/n)``,
    ``2^(-16/n)``, ..., ``2^(-8)``: ``1/2, 1/4, ..., 1/256`` for 8 heads.
    Otherwise, as in the paper's code, the ``p`` slopes of the largest power
    of 2 ``p < n`` come first, then the first ``n - p`` of the odd-numbered
    slopes of ``2p`` heads (``2^(-4/p)``, ``2^(-12/p)``, ...), which fall
    between them.

    Args:
        num_heads: number of attention heads.
        device: where to create the slopes.

    Returns:
        Float tensor of shape ``(num_heads,)``, each slope in ``(0, 1)``.
    """
    check_positive_int("num_heads", num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))  # p
    # 2^(-8 k / p) for k = 1 .. p
    powers = torch.arange(1, closest + 1, device=device)
    slopes = 2.0 ** (-8.0 * powers / closest)
    # 2^(-8 k / 2p) for odd k: the slopes of 2p heads that are not above.
    odd = 2 * torch.arange(num_heads - closest, device=device) + 1
    extra = 2.0 ** (-8.0 * odd / (2 * closest))
    return torch.cat([slopes, extra])


# --8<-- [end:alibi_slopes]


# --8<-- [start:alibi_bias]
def alibi_bias(
    num_heads: int,
    num_queries: int,
    num_keys: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """ALiBi's additive bias: ``slope[h] * (key position - query position)``.

    On and below the causal diagonal this is ``-slope[h]`` times how far back
    the key is; above it the entries are positive, and a causal mask must
    hide them. The queries are the last ``num_queries`` of the ``num_keys``
    positions, as in [`causal_mask`][attention_lib.masks.causal_mask] with
    ``align="lower_right"``.

    Args:
        num_heads: number of attention heads.
        num_queries: number of query positions.
        num_keys: number of key positions, at least ``num_queries``;
            defaults to ``num_queries``.
        device: where to create the bias.

    Returns:
        Float tensor of shape ``(num_heads, num_queries, num_keys)``, to add
        to the scaled scores ``(batch, num_heads, num_queries, num_keys)``.
    """
    check_positive_int("num_queries", num_queries)
    num_keys = check_num_keys(num_queries, num_keys)
    slopes = alibi_slopes(num_heads, device=device)  # (num_heads,)
    # (num_queries, 1): query i at position i + num_keys - num_queries
    query_pos = torch.arange(num_queries, device=device)[:, None]
    query_pos = query_pos + (num_keys - num_queries)
    key_pos = torch.arange(num_keys, device=device)  # (num_keys,)
    # (num_keys,) - (num_queries, 1) -> (num_queries, num_keys)
    distance = key_pos - query_pos
    # (num_heads, 1, 1) * (num_queries, num_keys)
    # -> (num_heads, num_queries, num_keys)
    return slopes[:, None, None] * distance


# --8<-- [end:alibi_bias]


# --8<-- [start:alibi_score_mod]
def alibi_score_mod(
    num_heads: int,
    q_offset: int = 0,
    device: torch.device | str | None = None,
) -> ScoreMod:
    """ALiBi as a FlexAttention ``score_mod``: the bias of [`alibi_bias`][attention_lib.alibi.alibi_bias], per score.

    Args:
        num_heads: number of attention heads; head ``h`` has slope
            ``alibi_slopes(num_heads)[h]``.
        q_offset: the position of the first query, ``num_keys -
            num_queries`` (the keys cached before it); 0 when queries and
            keys are the same tokens.
        device: the device of the queries, where the slopes must be.

    Returns:
        ``score_mod(score, b, h, q_idx, kv_idx)``, the score plus
        ``slope[h] * (kv_idx - q_idx - q_offset)``, in the score's dtype.
        Pass a causal ``block_mask`` with it, as the bias tensor needs a
        causal mask.
    """
    check_non_negative_int("q_offset", q_offset)
    slopes = alibi_slopes(num_heads, device=device)

    def alibi(
        score: torch.Tensor,
        b: torch.Tensor,
        h: torch.Tensor,
        q_idx: torch.Tensor,
        kv_idx: torch.Tensor,
    ) -> torch.Tensor:
        bias = slopes[h] * (kv_idx - q_idx - q_offset)
        return score + bias.to(score.dtype)

    return alibi


# --8<-- [end:alibi_score_mod]
