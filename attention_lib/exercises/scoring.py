"""The exercises of the scoring functions chapter."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..scoring import additive_scores, scaled_dot_product_scores
from ._core import COUNT, Exercise, Messages, call, expect, values_on

WORDS: Messages = {
    "batched": {
        "en": "with and without leading batch or heads dimensions",
        "zh": "带与不带前置的批量维度或头数维度都检查过",
    },
    "lib_additive": {
        "en": "attention_lib.additive_scores",
        "zh": "attention_lib.additive_scores",
    },
    "lib_scaled": {
        "en": "attention_lib.scaled_dot_product_scores",
        "zh": "attention_lib.scaled_dot_product_scores",
    },
    "pairs": {
        "en": "`(..., q, h) + (..., k, h)` adds query i to key i only (and "
        "fails when q != k); every query must meet every key: "
        "`(..., q, 1, h) + (..., 1, k, h)`, with `unsqueeze(-2)` on the "
        "queries and `unsqueeze(-3)` on the keys.",
        "zh": "`(..., q, h) + (..., k, h)` 只把第 i 个查询和第 i 个键相加"
        "（q != k 时还会报错）；每个查询都要和每个键相加："
        "`(..., q, 1, h) + (..., 1, k, h)`，对查询用 `unsqueeze(-2)`，"
        "对键用 `unsqueeze(-3)`。",
    },
    "transposed": {
        "en": "your scores come out (..., k, q): the queries must be the "
        "rows, so the new axis goes after the queries "
        "(`unsqueeze(-2)`) and before the keys (`unsqueeze(-3)`).",
        "zh": "你的分数形状是 (..., k, q)：查询应当对应行，所以新维度要加在"
        "查询之后（`unsqueeze(-2)`）、键之前（`unsqueeze(-3)`）。",
    },
    "layout": {
        "en": "W_q and W_k are laid out like nn.Linear's weight, "
        "(h, d_q) and (h, d_k): project with `queries @ W_q.T` (or "
        "`F.linear(queries, W_q)`), not `queries @ W_q`.",
        "zh": "W_q 和 W_k 的布局与 nn.Linear 的权重相同，分别是 (h, d_q) 和 "
        "(h, d_k)：投影要写 `queries @ W_q.T`（或 `F.linear(queries, W_q)`），"
        "而不是 `queries @ W_q`。",
    },
    "no_tanh": {
        "en": "the hidden layer has a `torch.tanh` between the sum and "
        "w_v; without it the score is linear in q and k.",
        "zh": "隐藏层在求和与 w_v 之间还有一个 `torch.tanh`；"
        "少了它，分数就只是 q 和 k 的线性函数。",
    },
    "no_w_v": {
        "en": "the h features are combined with the weights w_v, "
        "`features @ w_v.T`, not simply summed.",
        "zh": "h 个特征要用权重 w_v 组合起来，即 `features @ w_v.T`，"
        "而不是直接相加。",
    },
    "no_squeeze": {
        "en": "`features @ w_v.T` leaves a last dimension of size 1: "
        "`.squeeze(-1)` turns (..., q, k, 1) into (..., q, k).",
        "zh": "`features @ w_v.T` 会留下一个大小为 1 的最后维度："
        "用 `.squeeze(-1)` 把 (..., q, k, 1) 变成 (..., q, k)。",
    },
    "squeeze_all": {
        "en": "`.squeeze()` with no dimension drops every axis of size 1, "
        "not only the last: with a single query (or key, or batch) that "
        "axis goes too. Name the one to drop: `.squeeze(-1)` turns "
        "(..., q, k, 1) into (..., q, k).",
        "zh": "不带参数的 `.squeeze()` 会去掉所有大小为 1 的维度，不只是最后一个："
        "只有一个查询（或一个键、一个批量）时，那个维度也会被去掉。"
        "要指明去掉哪一个：`.squeeze(-1)` 把 (..., q, k, 1) 变成 (..., q, k)。",
    },
    "scale_dim1": {
        "en": "`keys.shape[1]` is the size of one key only for a 2-D "
        "tensor; with a batch in front it is the number of keys (or of "
        "heads): read d_k from the last dimension, `keys.shape[-1]`.",
        "zh": "只有二维张量的 `keys.shape[1]` 才是一个键的维度；前面多了"
        "批量维度时，它就成了键的个数（或头数）：要从最后一个维度读 d_k，"
        "即 `keys.shape[-1]`。",
    },
    "scale_d_k": {
        "en": "your scores are too small and the weights too flat: divide "
        "by the square root of d_k, `keys.shape[-1] ** 0.5`, not by d_k.",
        "zh": "你的分数太小，权重太平坦了：要除以 d_k 的平方根 "
        "`keys.shape[-1] ** 0.5`，而不是 d_k 本身。",
    },
    "no_scale": {
        "en": "the scores are not scaled: divide them by "
        "`keys.shape[-1] ** 0.5`.",
        "zh": "分数没有缩放：要把它们除以 `keys.shape[-1] ** 0.5`。",
    },
    "dot_t": {
        "en": "count the keys' dimensions from the end, whatever comes "
        "before them: swap only the last two, `keys.transpose(-2, -1)` (or "
        "`keys.mT`). `.T` reverses every dimension of a tensor with a batch, "
        "and a dimension counted from the front, as in `transpose(1, 2)`, is "
        "another one (or none at all) when the number of leading dimensions "
        "changes.",
        "zh": "键的维度要从后往前数，不管前面还有几个维度：只交换最后两个维度，"
        "即 `keys.transpose(-2, -1)`（或 `keys.mT`）。对带批量维度的张量，"
        "`.T` 会把所有维度整个倒过来；而从前往后数的维度，比如 "
        "`transpose(1, 2)` 里的 1 和 2，在前置维度的个数变了时，"
        "指的就是别的维度（甚至根本不存在）。",
    },
}


def _sizes(seed: int) -> tuple[tuple[int, ...], int, int]:
    # Leading dimensions (none, a batch, a batch and heads), numbers of
    # queries and keys that differ, so that a mix-up shows.
    lead = [(), (2,), (2, 3)][seed % 3]
    return lead, 1 + seed % 4, 2 + seed % 5


def _additive(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        # One seed on: the first inputs have n_q > 1, where adding query i
        # to key i only shows; n_q = 1 comes later (seeds 3, 7, ...), where
        # `.squeeze()` drops the query axis too.
        lead, n_q, n_k = _sizes(seed + 1)
        d_q, d_k, h = 2 + seed % 3, 3 + seed % 4, 5 + seed % 3
        queries = torch.randn(*lead, n_q, d_q, generator=g)
        keys = torch.randn(*lead, n_k, d_k, generator=g)
        W_q = torch.randn(h, d_q, generator=g)
        W_k = torch.randn(h, d_k, generator=g)
        w_v = torch.randn(1, h, generator=g)
        q, k = queries @ W_q.T, keys @ W_k.T  # (..., n, h)
        both = q.unsqueeze(-2) + k.unsqueeze(-3)  # (..., n_q, n_k, h)
        wrong = {
            # Before "pairs": with a single query, q + k broadcasts and
            # gives these same scores.
            "squeeze_all": lambda: (torch.tanh(both) @ w_v.T).squeeze(),
            "pairs": lambda: (torch.tanh(q + k) @ w_v.T).squeeze(-1),
            "transposed": lambda: (
                torch.tanh(q.unsqueeze(-3) + k.unsqueeze(-2)) @ w_v.T
            ).squeeze(-1),
            "layout": lambda: (
                torch.tanh(
                    (queries @ W_q).unsqueeze(-2) + (keys @ W_k).unsqueeze(-3)
                )
                @ w_v.T
            ).squeeze(-1),
            "no_tanh": lambda: (both @ w_v.T).squeeze(-1),
            "no_w_v": lambda: torch.tanh(both).sum(dim=-1),
            "no_squeeze": lambda: torch.tanh(both) @ w_v.T,
        }
        args = (queries, keys, W_q, W_k, w_v)
        out = call(answer, *args, wrong=wrong)
        expect(out, additive_scores(*args), "scores", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "scores", "shape": "(..., n_q, n_k)"}
    values = values_on("lib_additive")
    return [("shape", shape), ("values", values), ("batched", {})]


def _scaled(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        lead, n_q, n_k = _sizes(seed)
        d_k = 2 + seed % 6
        queries = torch.randn(*lead, n_q, d_k, generator=g)
        keys = torch.randn(*lead, n_k, d_k, generator=g)
        dots = queries @ keys.transpose(-2, -1)  # (..., n_q, n_k)

        def swapped_wrong() -> torch.Tensor:
            # Swapping other dimensions than the last two: `.T`, or on 2-D
            # keys, where `.T` is right, `transpose(1, 2)`, which raises
            # there. (On 4-D keys, `transpose(1, 2)` raises the error that
            # `.T` raises, unless there are as many keys as heads.)
            return keys.transpose(1, 2) if keys.dim() == 2 else keys.T

        wrong = {
            "scale_dim1": lambda: dots / math.sqrt(keys.shape[1]),
            "scale_d_k": lambda: dots / d_k,
            "no_scale": lambda: dots,
            "dot_t": lambda: queries @ swapped_wrong() / math.sqrt(d_k),
        }
        out = call(answer, queries, keys, wrong=wrong)
        expected = scaled_dot_product_scores(queries, keys)
        expect(out, expected, "scores", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "scores", "shape": "(..., n_q, n_k)"}
    values = values_on("lib_scaled")
    return [("shape", shape), ("values", values), ("batched", {})]


EXERCISES = [
    Exercise("exercise-additive-scores", _additive, WORDS),
    Exercise("exercise-scaled-scores-bug", _scaled, WORDS),
]
