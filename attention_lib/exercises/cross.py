"""The exercises of the cross-attention chapter."""

from __future__ import annotations

from typing import Any

import torch

from ..cross import CrossAttention
from ..dot_product import DotProductAttention
from ._core import COUNT, Exercise, Messages, call, expect, values_on

_QUERY_AXIS = {
    "en": "the padding belongs to the source, whose tokens are the keys, "
    "the columns of the scores: the `(b, t2)` mask must become `(b, 1, t2)`, "
    "`padding.unsqueeze(1)`; `(b, t2, 1)`, `padding.unsqueeze(-1)`, hides "
    "rows of queries instead (and runs only while t1 equals t2).",
    "zh": "填充属于源序列，而源序列的词元是键，也就是分数的列：形状为 `(b, t2)` "
    "的掩码要变成 `(b, 1, t2)`，即 `padding.unsqueeze(1)`；变成 `(b, t2, 1)`"
    "（`padding.unsqueeze(-1)`）遮住的却是查询所在的行（而且只有 t1 等于 t2 "
    "时才能运行）。",
}

WORDS: Messages = {
    "lib_cross": {
        "en": "attention_lib.CrossAttention with the same weights",
        "zh": "权重相同的 attention_lib.CrossAttention",
    },
    "lib_padded": {
        "en": "attention_lib.DotProductAttention with the same valid lengths",
        "zh": "有效长度相同的 attention_lib.DotProductAttention",
    },
    "ranks_shape": {
        "en": "(t1, d_out_v) or (b, t1, d_out_v)",
        "zh": "(t1, d_out_v) 或 (b, t1, d_out_v)",
    },
    "both_ranks": {
        "en": "unbatched (t1, d_in) and batched (b, t1, d_in) inputs, "
        "with t1 != t2",
        "zh": "不带批量维度的 (t1, d_in) 和带批量维度的 (b, t1, d_in) "
        "输入都试过，且 t1 != t2",
    },
    "kv_from_x1": {
        "en": "your keys and values come from x_1, which makes it "
        "self-attention: only the queries come from x_1, the keys and the "
        "values from x_2 (`x_2 @ W_key`, `x_2 @ W_value`).",
        "zh": "你的键和值来自 x_1，这就成了自注意力：只有查询来自 x_1，"
        "键和值都来自 x_2（`x_2 @ W_key`、`x_2 @ W_value`）。",
    },
    "queries_from_x2": {
        "en": "there is one context vector per query, and the queries come "
        "from x_1 (`x_1 @ W_query`), not from x_2.",
        "zh": "每个查询对应一个上下文向量，而查询来自 x_1（`x_1 @ W_query`），"
        "不是 x_2。",
    },
    "keys_from_x1": {
        "en": "the keys come from x_2, like the values: `x_2 @ W_key`; with "
        "keys from x_1 the weights have t1 columns for t2 values.",
        "zh": "键和值一样来自 x_2：`x_2 @ W_key`；键取自 x_1 时，"
        "注意力权重有 t1 列，值却有 t2 行。",
    },
    "values_from_x1": {
        "en": "the values come from x_2, like the keys: `x_2 @ W_value`; "
        "the weights have one column per token of x_2.",
        "zh": "值和键一样来自 x_2：`x_2 @ W_value`；注意力权重的每一列对应 x_2 "
        "的一个词元。",
    },
    "scale_d_k": {
        "en": "your weights are too flat: divide the scores by the square "
        "root of d_k, `keys.shape[-1] ** 0.5`, not by d_k.",
        "zh": "你的注意力权重太平坦了：分数要除以 d_k 的平方根 "
        "`keys.shape[-1] ** 0.5`，而不是 d_k 本身。",
    },
    "scale_d_in": {
        "en": "scale by the square root of the size of one key, "
        "`keys.shape[-1] ** 0.5` (d_out_kq), not of the inputs' size d_in "
        "(`x_1.shape[-1]`, `W_key.shape[0]`): the projections change the "
        "size, and the scores are dot products of keys and queries.",
        "zh": "要除以一个键的维度的平方根 `keys.shape[-1] ** 0.5`（即 "
        "d_out_kq），而不是输入维度 d_in 的平方根（`x_1.shape[-1]`、"
        "`W_key.shape[0]`）：投影会改变维度，而分数是查询和键的点积。",
    },
    "no_scale": {
        "en": "the scores are not scaled: divide them by "
        "`keys.shape[-1] ** 0.5` before the softmax.",
        "zh": "分数没有缩放：在 softmax 之前把它们除以 `keys.shape[-1] ** 0.5`。",
    },
    "dot_t": {
        "en": "`.T` reverses every dimension of a batched tensor; swap only "
        "the last two, `keys.transpose(-2, -1)`, which serves unbatched "
        "and batched inputs alike.",
        "zh": "对带批量维度的张量，`.T` 会把所有维度整个倒过来；只交换最后两个维度："
        "`keys.transpose(-2, -1)`，这样不带和带批量维度的输入都适用。",
    },
    "softmax_queries": {
        "en": "softmax over the keys, `dim=-1`: each query's weights over "
        "the t2 tokens of x_2 sum to 1; `dim=-2` normalizes over the "
        "queries instead.",
        "zh": "softmax 要在键所在的维度 `dim=-1` 上做：每个查询对 x_2 的 t2 "
        "个词元的权重之和为 1；`dim=-2` 归一化的却是各个查询。",
    },
    "mask_queries": _QUERY_AXIS,
    "mask_queries_finite": _QUERY_AXIS,
    "inverted": {
        "en": "the mask hides the real keys instead of the padding: True "
        "means masked out, so the padding is "
        "`torch.arange(t2) >= valid_lens[:, None]`.",
        "zh": "这个掩码遮住的是真实的键，而不是填充：True 表示遮蔽，"
        "所以填充是 `torch.arange(t2) >= valid_lens[:, None]`。",
    },
    "no_mask": {
        "en": "the keys at positions >= valid_len are padding and still "
        "get weight: fill their scores with `-torch.inf` before the "
        "softmax.",
        "zh": "位置 >= valid_len 的键是填充，却仍然分到了权重：在 softmax "
        "之前把它们的分数填成 `-torch.inf`。",
    },
    "zero_fill": {
        "en": "a masked score of 0 still gets weight `exp(0)`: fill the "
        "scores of the padding with `-torch.inf`.",
        "zh": "被遮蔽的分数填成 0 仍然会得到权重 `exp(0)`：要把填充的分数填成 "
        "`-torch.inf`。",
    },
}


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    dim: int = -1,
) -> torch.Tensor:
    # The reader's steps, in the reader's order, so that a wrong one
    # raises the same error as theirs.
    return torch.softmax(q @ k.transpose(-2, -1) / scale, dim=dim) @ v


def _cross_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # Two lengths that differ, so that taking a tensor from the wrong
        # sequence shows; d_kq >= 2, so that d_k and its root differ; d_in
        # neither d_kq nor its square, so that scaling by the root of d_in
        # shows and is not scaling by d_kq.
        t1, d_kq, d_v = 2 + seed % 4, 2 + seed % 3, 1 + seed % 4
        t2, d_in = t1 + 1 + seed % 3, d_kq + 1 + 2 * (seed % 2)
        torch.manual_seed(seed)
        reference = CrossAttention(d_in, d_kq, d_v)
        # Even seeds unbatched, odd ones batched (b = 2 or 3).
        batch = () if seed % 2 == 0 else (2 + (seed // 2) % 2,)
        g = torch.Generator().manual_seed(seed)
        x_1 = torch.randn(*batch, t1, d_in, generator=g)
        x_2 = torch.randn(*batch, t2, d_in, generator=g)
        weights = [
            p.detach().clone()
            for p in (reference.W_query, reference.W_key, reference.W_value)
        ]
        w_q, w_k, w_v = weights
        q1, k1, v1 = x_1 @ w_q, x_1 @ w_k, x_1 @ w_v
        q2, k2, v2 = x_2 @ w_q, x_2 @ w_k, x_2 @ w_v
        root = d_kq**0.5
        wrong = {
            "kv_from_x1": lambda: _attend(q1, k1, v1, root),
            "queries_from_x2": lambda: _attend(q2, k2, v2, root),
            "keys_from_x1": lambda: _attend(q1, k1, v2, root),
            "values_from_x1": lambda: _attend(q1, k2, v1, root),
            "scale_d_k": lambda: _attend(q1, k2, v2, d_kq),
            "scale_d_in": lambda: _attend(q1, k2, v2, d_in**0.5),
            "no_scale": lambda: _attend(q1, k2, v2, 1.0),
            "dot_t": lambda: torch.softmax(q1 @ k2.T / root, dim=-1) @ v2,
            "softmax_queries": lambda: _attend(q1, k2, v2, root, dim=-2),
        }
        out = call(answer, x_1, x_2, *weights, wrong=wrong)
        with torch.no_grad():
            expected = reference(x_1, x_2)
        expect(out, expected, "context", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "context", "shape": "ranks_shape"}
    values = values_on("lib_cross")
    return [("shape", shape), ("values", values), ("both_ranks", {})]


def _padded_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # The first inputs are square (t1 = t2), the case where a mask on
        # the wrong axis runs without an error; the others are not.
        b, d, d_v = 2 + seed % 2, 2 + seed % 3, 1 + seed % 3
        t2 = 3 + seed % 4
        t1 = t2 if seed < 4 else 1 + seed % 5
        t1 += t1 == t2 and seed >= 4
        g = torch.Generator().manual_seed(seed)
        queries = torch.randn(b, t1, d, generator=g)
        keys = torch.randn(b, t2, d, generator=g)
        values = torch.randn(b, t2, d_v, generator=g)
        # At least one real key per sequence, and some padding in the first.
        valid_lens = torch.randint(1, t2 + 1, (b,), generator=g)
        valid_lens[0] = 1 + seed % (t2 - 1)
        scores = queries @ keys.transpose(1, 2) / d**0.5  # (b, t1, t2)
        padding = torch.arange(t2) >= valid_lens[:, None]  # (b, t2)
        real = ~padding
        inf, low = -torch.inf, torch.finfo(scores.dtype).min

        def weighted(mask: torch.Tensor, fill: float) -> torch.Tensor:
            return torch.softmax(scores.masked_fill(mask, fill), -1) @ values

        wrong = {
            "mask_queries": lambda: weighted(padding[:, :, None], inf),
            "mask_queries_finite": lambda: weighted(padding[:, :, None], low),
            "inverted": lambda: weighted(real[:, None, :], inf),
            "no_mask": lambda: torch.softmax(scores, dim=-1) @ values,
            "zero_fill": lambda: weighted(padding[:, None, :], 0.0),
        }
        args = (queries, keys, values, valid_lens.clone())
        out = call(answer, *args, wrong=wrong)
        expected = DotProductAttention(0.0)(queries, keys, values, valid_lens)
        expect(out, expected, "context", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "context", "shape": "(b, t1, d_v)"}
    values = values_on("lib_padded")
    return [("shape", shape), ("values", values)]


EXERCISES = [
    Exercise("exercise-cross-attention", _cross_attention, WORDS),
    Exercise("exercise-cross-padding-bug", _padded_attention, WORDS),
]
