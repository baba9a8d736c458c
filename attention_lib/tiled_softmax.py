"""Softmax in tiles: attention over blocks of keys with a running maximum and sum.

A softmax needs the largest score of a row (to stay in range) and the sum of
its exponentials (to normalize) before it can weight any value, so plain
attention keeps the whole ``(num_queries, num_keys)`` table of scores. The
online softmax reads the keys a tile at a time instead and keeps, per query,
three running quantities: the largest score so far ``m``, the sum
``l = Σ exp(s - m)`` and the output ``o = Σ exp(s - m) · v``, not yet divided.
When a tile raises the maximum, the old sum and output were computed against
a smaller ``m``: multiplying them by ``exp(m_old - m_new)`` puts them on the
new scale. After the last tile, ``o / l`` is the attention output, equal to
``masked_softmax(scores, mask) @ values``; only one tile of scores ever
exists. This is the loop inside FlashAttention's kernels.

Masks follow the library's convention, True = masked out. A query whose keys
are all masked gets zeros, as ``masked_softmax`` gives it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch

from ._checks import check_mask, check_positive_int, check_tensor


class TileStep(NamedTuple):
    """What the loop holds after one tile of keys, ``keys[..., start:stop, :]``.

    Shape:
        - ``scores``: ``(..., num_queries, stop - start)``, the tile's scaled
          scores, ``-inf`` where masked.
        - ``running_max``, ``rescale``, ``running_sum``:
          ``(..., num_queries, 1)``. ``running_max`` is ``-inf`` while every
          key so far is masked; ``rescale`` is ``exp(old max - new max)``,
          what the previous sum and output were multiplied by.
        - ``output``: ``(..., num_queries, value_size)``, the weighted sum of
          the values so far, not yet divided by ``running_sum``.
    """

    start: int
    stop: int
    scores: torch.Tensor
    running_max: torch.Tensor
    rescale: torch.Tensor
    running_sum: torch.Tensor
    output: torch.Tensor


def _finite(running_max: torch.Tensor) -> torch.Tensor:
    # exp(s - m) with m = -inf would be exp(nan) for masked s: subtract 0 instead
    return running_max.masked_fill(running_max == float("-inf"), 0.0)


def _checked(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    tile_size: int,
) -> tuple[torch.Tensor | None, tuple[int, ...]]:
    """Refuse what tile_steps cannot attend over, naming the argument.

    Returns the mask spread to ``(..., num_queries, num_keys)`` (a view), so
    that a tile of it is the tile's columns even where the mask broadcasts
    along the keys, and the leading dimensions of the output."""
    check_tensor(
        "queries", queries, ("num_queries", "head_dim"), any_leading=True
    )
    check_tensor(
        "keys",
        keys,
        ("num_keys", "head_dim"),
        queries.shape[-1],
        any_leading=True,
    )
    check_tensor(
        "values", values, ("num_keys", "value_size"), any_leading=True
    )
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            "keys and values must have the same number of positions, "
            f"got {keys.shape[-2]} and {values.shape[-2]}"
        )
    if keys.shape[-2] == 0:
        raise ValueError("keys must hold at least one position, got 0")
    check_positive_int("tile_size", tile_size)
    # torch leaves broadcast_shapes unannotated.
    broadcast: Callable[..., torch.Size] = torch.broadcast_shapes
    lead = tuple(
        broadcast(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    )
    if mask is None:
        return None, lead
    shape = (
        *broadcast(queries.shape[:-2], keys.shape[:-2]),
        queries.shape[-2],
        keys.shape[-2],
    )
    return check_mask("mask", mask, shape).expand(shape), lead


# --8<-- [start:tile_steps]
def tile_steps(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
    tile_size: int = 64,
) -> Iterator[TileStep]:
    """Scaled dot-product attention one tile of keys at a time, step by step.

    Args:
        queries: ``(..., num_queries, head_dim)``.
        keys: ``(..., num_keys, head_dim)``.
        values: ``(..., num_keys, value_size)``.
        mask: boolean, broadcasts to ``(..., num_queries, num_keys)``;
            True = masked out. None: every query sees every key.
        tile_size: keys per tile; the last tile may be shorter.

    Yields:
        One [`TileStep`][attention_lib.tiled_softmax.TileStep] per tile.
    """
    mask, lead = _checked(queries, keys, values, mask, tile_size)
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    queries = queries / math.sqrt(queries.shape[-1])
    running_max = queries.new_full((*lead, num_queries, 1), float("-inf"))
    running_sum = queries.new_zeros((*lead, num_queries, 1))
    output = queries.new_zeros((*lead, num_queries, values.shape[-1]))
    for start in range(0, num_keys, tile_size):
        stop = min(start + tile_size, num_keys)
        tile_keys = keys[..., start:stop, :]  # (..., tile, head_dim)
        scores = queries @ tile_keys.mT  # (..., num_queries, tile)
        if mask is not None:
            scores = scores.masked_fill(mask[..., start:stop], float("-inf"))
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        # the sum and output so far are on the old max's scale: move them
        rescale = torch.exp(running_max - _finite(new_max))
        exps = torch.exp(scores - _finite(new_max))  # (..., num_queries, tile)
        running_sum = running_sum * rescale + exps.sum(dim=-1, keepdim=True)
        output = output * rescale + exps @ values[..., start:stop, :]
        running_max = new_max
        yield TileStep(
            start, stop, scores, running_max, rescale, running_sum, output
        )


# --8<-- [end:tile_steps]


# --8<-- [start:tiled_attention]
def tiled_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
    tile_size: int = 64,
) -> torch.Tensor:
    """Scaled dot-product attention computed over tiles of keys (online softmax).

    Equal to ``masked_softmax(scaled_dot_product_scores(queries, keys), mask)
    @ values`` up to rounding, holding one tile of scores at a time.

    Args:
        queries: ``(..., num_queries, head_dim)``.
        keys: ``(..., num_keys, head_dim)``.
        values: ``(..., num_keys, value_size)``.
        mask: boolean, broadcasts to ``(..., num_queries, num_keys)``;
            True = masked out.
        tile_size: keys per tile.

    Returns:
        Context vectors ``(..., num_queries, value_size)``; zeros for a query
        whose every key is masked.
    """
    *_, last = tile_steps(queries, keys, values, mask, tile_size)
    # a query that saw no key has sum 0 and output 0: divide by 1 instead
    return last.output / last.running_sum.masked_fill(
        last.running_sum == 0, 1.0
    )


# --8<-- [end:tiled_attention]


# --8<-- [start:online_softmax]
def online_softmax(
    attn_scores: torch.Tensor, tile_size: int = 64
) -> torch.Tensor:
    """Softmax over the last dimension, its max and sum found in one pass of tiles.

    Args:
        attn_scores: ``(..., num_keys)``; ``-inf`` marks a masked score.
        tile_size: scores read per step in the first pass.

    Returns:
        Weights of the same shape; a row of only ``-inf`` gives zeros.
    """
    check_tensor("attn_scores", attn_scores, ("num_keys",), any_leading=True)
    check_positive_int("tile_size", tile_size)
    running_max = attn_scores.new_full(
        (*attn_scores.shape[:-1], 1), float("-inf")
    )
    running_sum = attn_scores.new_zeros((*attn_scores.shape[:-1], 1))
    for start in range(0, attn_scores.shape[-1], tile_size):
        tile = attn_scores[..., start : start + tile_size]
        new_max = torch.maximum(running_max, tile.amax(dim=-1, keepdim=True))
        rescale = torch.exp(running_max - _finite(new_max))
        exps = torch.exp(tile - _finite(new_max))
        running_sum = running_sum * rescale + exps.sum(dim=-1, keepdim=True)
        running_max = new_max
    exps = torch.exp(attn_scores - _finite(running_max))
    return exps / running_sum.masked_fill(running_sum == 0, 1.0)


# --8<-- [end:online_softmax]
