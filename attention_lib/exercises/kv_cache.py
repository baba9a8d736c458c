"""The exercises of the KV cache chapter: one cached attention step, checked
step by step against the library's forward over the whole sequence."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

from ..heads import split_heads
from ..masks import masked_softmax
from ..multihead import MultiHeadAttention
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    call,
    expect,
    values_on,
)

WORDS: Messages = {
    "cache_k": {"en": "keys in the cache", "zh": "缓存中的键"},
    "cache_v": {"en": "values in the cache", "zh": "缓存中的值"},
    "lib_forward": {
        "en": "the rows of attention_lib.MultiHeadAttention's forward over "
        "the whole sequence",
        "zh": "attention_lib.MultiHeadAttention 对整个序列做一次前向传播"
        "所得的对应各行",
    },
    "steps": {
        "en": "each sequence fed as a prompt, one new token, then pieces of "
        "1 to 3 tokens",
        "zh": "每个序列依次输入：先是提示词，然后是一个新词元，再是每次 1 到 3 "
        "个词元的片段",
    },
    "cache_after": {
        "en": "after each step the cache holds every token so far, in order",
        "zh": "每一步之后，缓存按顺序存着到目前为止的所有词元",
    },
    "top_left": {
        "en": "the new queries are the last positions: align the causal "
        "mask bottom-right, `torch.triu(ones, diagonal=1 + num_past)`; "
        "`is_causal=True` and a plain `triu(..., diagonal=1)` align it "
        "top-left, and the newest token then sees only the first ones.",
        "zh": "新的查询是最后几个位置：因果掩码要右下对齐，"
        "`torch.triu(ones, diagonal=1 + num_past)`；`is_causal=True` "
        "和普通的 `triu(..., diagonal=1)` 都是左上对齐，"
        "最新的词元就只能看到最前面的几个词元。",
    },
    "no_mask": {
        "en": "one new token may see every key, but when several come at "
        "once (the prompt, or a piece of a few) each of them still needs "
        "the causal mask, aligned bottom-right.",
        "zh": "只有一个新词元时它可以看到所有的键；但一次输入多个词元时"
        "（提示词，或几个词元的片段），其中每个词元仍然需要右下对齐的因果掩码。",
    },
    "sees_next": {
        "en": "the mask is one too far to the right: each new token also "
        "sees the token after it. A query sees the keys up to and "
        "including its own position: `torch.triu(ones, diagonal=1 + "
        "num_past)`, not `2 + num_past`.",
        "zh": "掩码向右偏了一位：每个新词元还多看到了它后面的那个词元。"
        "查询能看到的键只到它自己的位置为止（包括它自己）："
        "`torch.triu(ones, diagonal=1 + num_past)`，而不是 `2 + num_past`。",
    },
    "hides_self": {
        "en": "the mask hides the diagonal: each token must see itself, so "
        "a query sees the keys up to and including its own position, "
        "`torch.triu(ones, diagonal=1 + num_past)`. With `diagonal="
        "num_past` the prompt's first token sees no key at all, and its "
        "row comes out nan (zeros through SDPA).",
        "zh": "掩码把对角线也遮住了：每个词元都必须能看到它自己，所以查询能看到的键"
        "只到它自己的位置为止（包括它自己）：`torch.triu(ones, diagonal=1 + "
        "num_past)`。用 `diagonal=num_past` 时，提示词的第一个词元一个键也看不到，"
        "它那一行就成了 nan（经过 SDPA 则是全零）。",
    },
    "cat_dim": {
        "en": "once the heads are split, the tokens are dimension 2 of "
        "(batch, num_heads, num_tokens, head_dim), not 1: "
        "`torch.cat([cache.cache_k, keys], dim=2)`.",
        "zh": "拆分成多个头之后，词元是 (batch, num_heads, num_tokens, "
        "head_dim) 的第 2 维，而不是第 1 维："
        "`torch.cat([cache.cache_k, keys], dim=2)`。",
    },
    "empty": {
        "en": "the cache starts empty, `cache.cache_k is None`: concatenate "
        "only when something is cached, and otherwise keep the new keys "
        "and values as they are.",
        "zh": "缓存一开始是空的，`cache.cache_k is None`：只有缓存里已有内容时"
        "才拼接，否则直接使用新的键和值。",
    },
    "new_first": {
        "en": "the cache holds the earlier tokens, so it goes first: "
        "`torch.cat([cache.cache_k, keys], dim=2)`, and key j is token j.",
        "zh": "缓存里是更早的词元，所以要放在前面："
        "`torch.cat([cache.cache_k, keys], dim=2)`，这样第 j 个键就是词元 j。",
    },
    "no_store": {
        "en": "store the keys and values back in the cache, "
        "`cache.cache_k, cache.cache_v = keys, values`: the next step "
        "needs them.",
        "zh": "要把键和值存回缓存：`cache.cache_k, cache.cache_v = keys, "
        "values`，下一步要用到它们。",
    },
    "store_new": {
        "en": "the cache must keep every token so far: store the "
        "concatenated keys and values, not only the new ones.",
        "zh": "缓存必须保留到目前为止的所有词元：存回拼接之后的键和值，"
        "而不只是新的那几个。",
    },
    "scale_d_k": {
        "en": "your weights are too flat: divide the scores by "
        "`head_dim ** 0.5`, the square root of d_k, not by d_k.",
        "zh": "你的注意力权重太平坦了：分数要除以 d_k 的平方根 "
        "`head_dim ** 0.5`，而不是 d_k 本身。",
    },
}


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
) -> torch.Tensor:
    # (b, h, t, head_dim) @ (b, h, head_dim, num_keys) -> (b, h, t, num_keys)
    scores = q @ k.transpose(2, 3) / scale
    return masked_softmax(scores, mask) @ v


def _hide_self(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    out: object,
) -> torch.Tensor:
    """Attention with the diagonal hidden, as the reader's ``out`` gives a
    row with every key hidden: nan (masked_fill and softmax) or zeros."""
    scores = (q @ k.transpose(2, 3) / scale).masked_fill(mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    if isinstance(out, torch.Tensor) and not torch.isnan(out).any():
        weights = weights.nan_to_num(0.0)
    return weights @ v


def _step(
    answer: Any,
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    full: torch.Tensor,
    start: int,
    end: int,
) -> None:
    """One call of the reader's step: the tokens start..end, with the
    tokens before start already in the cache."""
    q, k, v = qkv
    head_dim = q.shape[-1]
    new = (q[:, :, start:end], k[:, :, start:end], v[:, :, start:end])
    past_k, past_v = k[:, :, :start], v[:, :, :start]
    keys, values = k[:, :, :end], v[:, :, :end]
    ones = torch.ones(end - start, end, dtype=torch.bool)
    right = torch.triu(ones, diagonal=1 + start)  # bottom-right aligned
    root = head_dim**0.5
    next_too = torch.triu(ones, diagonal=2 + start)  # one key too many
    wrong: dict[str, Callable[[], torch.Tensor]] = {
        "top_left": lambda: _attend(new[0], keys, values, ones.triu(1), root),
        "no_mask": lambda: _attend(new[0], keys, values, None, root),
        "sees_next": lambda: _attend(new[0], keys, values, next_too, root),
        "scale_d_k": lambda: _attend(new[0], keys, values, right, head_dim),
    }
    if start == 0:  # an empty cache: the reader's code must not concatenate
        wrong["empty"] = lambda: torch.cat([None, new[1]], dim=2)  # type: ignore[list-item]
    else:
        wrong["cat_dim"] = lambda: torch.cat([past_k, new[1]], dim=1)
    # The cache as a right answer left it after the step before.
    cache = SimpleNamespace(
        cache_k=past_k if start else None, cache_v=past_v if start else None
    )
    with torch.no_grad():
        out = call(answer, cache, *new, wrong=wrong)
    # The diagonal hidden too: the prompt's first query sees no key, a row
    # that masked_fill and softmax make nan and SDPA makes zeros.
    wrong["hides_self"] = lambda: _hide_self(
        new[0], keys, values, torch.triu(ones, diagonal=start), root, out
    )
    expect(out, full[:, :, start:end], "context", wrong)
    for name, past, whole in (
        ("cache_k", past_k, keys),
        ("cache_v", past_v, values),
    ):
        stored, now = getattr(cache, name), whole[:, :, start:]
        if not isinstance(stored, torch.Tensor):
            raise WrongAnswerError(
                "shape",
                "no_store",
                what=name,
                got=stored,
                expected=tuple(whole.shape),
            )
        stale = {
            "new_first": lambda: torch.cat([now, past], dim=2),  # noqa: B023
            "store_new": lambda: now,  # noqa: B023
            "no_store": lambda: past,  # noqa: B023
        }
        expect(stored, whole, name, stale)


def _cached_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        b, num_heads, head_dim = 1 + seed % 2, 1 + seed % 3, 2 + seed % 3
        n, d_out = 5 + seed % 5, num_heads * head_dim
        torch.manual_seed(seed)
        mha = MultiHeadAttention(d_out, d_out, n, 0.0, num_heads)
        x = torch.randn(b, n, d_out)
        # The library's context vectors, taken before out_proj mixes them.
        captured: list[torch.Tensor] = []
        mha.out_proj.register_forward_pre_hook(
            lambda module, args: captured.append(args[0])
        )
        with torch.no_grad():
            mha(x)
            # (b, n, d_out) -> (b, num_heads, n, head_dim), for q, k and v
            q, k, v = (
                split_heads(layer(x), num_heads)
                for layer in (mha.W_query, mha.W_key, mha.W_value)
            )
        # (b, n, d_out) -> (b, num_heads, n, head_dim)
        full = split_heads(captured[0], num_heads)
        # A prompt of at least 3 tokens (with 2, a mask one key too far hides
        # nothing and looks like no mask), one new token, then pieces of 1
        # to 3.
        ends = [3 + seed % (n - 4)]
        ends.append(ends[0] + 1)
        while ends[-1] < n:
            ends.append(min(n, ends[-1] + 1 + (seed + len(ends)) % 3))
        for start, end in zip([0, *ends[:-1]], ends, strict=True):
            _step(answer, (q, k, v), full, start, end)

    for seed in range(COUNT):
        once(seed)
    values = values_on("lib_forward")
    return [("values", values), ("steps", {}), ("cache_after", {})]


EXERCISES = [
    Exercise("exercise-cached-attention", _cached_attention, WORDS),
    Exercise("exercise-cache-is-causal-bug", _cached_attention, WORDS),
]
