"""The exercises of the first chapters: attention scores, attention weights
and context vectors, without trainable weights."""

from __future__ import annotations

from typing import Any

import torch

from ..weight_free import attn_scores_all
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    call,
    expect,
    rows_sum_to_one,
    values_on,
)

WORDS: Messages = {
    "dims_product": {
        "en": "`inputs.T @ inputs` pairs dimensions with dimensions, "
        "(d_in, d_in); the scores pair tokens with tokens: "
        "`inputs @ inputs.T`.",
        "zh": "`inputs.T @ inputs` 是维度与维度两两相乘，形状为 (d_in, d_in)；"
        "注意力分数要的是词元与词元两两相乘：`inputs @ inputs.T`。",
    },
    "elementwise": {
        "en": "`*` multiplies element by element; a dot product of every "
        "pair of tokens is a matrix product, `@`.",
        "zh": "`*` 是逐元素相乘；每一对词元的点积要用矩阵乘法 `@`。",
    },
    "one_query": {
        "en": "that is the scores of one query; every query at once is "
        "`inputs @ inputs.T`.",
        "zh": "这只是一个查询的分数；一次算出所有查询的分数要用 "
        "`inputs @ inputs.T`。",
    },
    "dot_t": {
        "en": "swap only the last two dimensions, whatever comes before "
        "them: `x.transpose(-2, -1)` (or `x.mT`). On a 3-D tensor `.T` "
        "reverses every dimension, the batch included, and "
        "`transpose(0, 1)` swaps the batch with the tokens.",
        "zh": "只交换最后两个维度，不管前面还有几个维度：`x.transpose(-2, -1)`"
        "（或 `x.mT`）。对三维张量，`.T` 会把所有维度（包括批量维度）整个倒过来，"
        "而 `transpose(0, 1)` 交换的是批量维度和词元维度。",
    },
    "naive": {
        "en": "`exp` of a large score overflows to inf, and inf / inf is "
        "nan: subtract each row's largest score before `exp` (softmax does "
        "not change when a whole row is shifted).",
        "zh": "分数很大时 `exp` 会溢出成 inf，而 inf / inf 是 nan："
        "在 `exp` 之前先减去每一行的最大分数（整行平移不会改变 softmax 的结果）。",
    },
    "global_max": {
        "en": "subtract each row's own largest score, "
        "`x.max(dim=-1, keepdim=True).values`, not the largest of the whole "
        "tensor: a row far below it underflows to 0 / 0.",
        "zh": "要减去每一行自己的最大值 `x.max(dim=-1, keepdim=True).values`，"
        "而不是整个张量的最大值：远小于它的那一行会下溢成 0 / 0。",
    },
    "no_keepdim": {
        "en": "without `keepdim=True` the row maxima have shape (n,) and "
        "are subtracted from every row, one per column; keep them as (n, 1).",
        "zh": "不加 `keepdim=True` 时，每行的最大值形状是 (n,)，会按列广播，"
        "从每一行逐列减去；要保持形状 (n, 1)。",
    },
    "col_max": {
        "en": "`x.max(dim=0)` takes the largest score of each column; each "
        "row needs its own largest score, "
        "`x.max(dim=-1, keepdim=True).values`.",
        "zh": "`x.max(dim=0)` 取的是每一列的最大分数；每一行要减去的是它自己的"
        "最大分数 `x.max(dim=-1, keepdim=True).values`。",
    },
    "sum_no_keepdim": {
        "en": "without `keepdim=True` the row sums have shape (n,) and "
        "divide the columns, one sum per column; keep them as (n, 1): "
        "`exps.sum(dim=-1, keepdim=True)`.",
        "zh": "不加 `keepdim=True` 时，每行之和的形状是 (n,)，会按列广播，"
        "逐列去除；要保持形状 (n, 1)：`exps.sum(dim=-1, keepdim=True)`。",
    },
    "not_row_max": {
        "en": "subtract each row's largest score, "
        "`x.max(dim=-1, keepdim=True).values`: any other shift (the row's "
        "smallest score, its mean, its first score) leaves an exponent far "
        "above 0 in a row whose scores are far apart, and `exp` overflows "
        "to inf.",
        "zh": "要减去每一行的最大分数 `x.max(dim=-1, keepdim=True).values`："
        "换成别的平移量（这一行的最小分数、平均值或第一个分数），"
        "在分数相差很大的行里仍会留下远大于 0 的指数，`exp` 就会溢出成 inf。",
    },
    "by_sum": {
        "en": "that is dividing by the sum; softmax takes `exp` of each "
        "score first, then divides by the sum of those.",
        "zh": "这是直接除以总和；softmax 要先对每个分数取 `exp`，再除以这些值的和。",
    },
    "dim0": {
        "en": "each row (one query) must sum to 1: normalize over the last "
        "dimension, `dim=-1`, not `dim=0`.",
        "zh": "每一行（一个查询）之和必须是 1：在最后一个维度 `dim=-1` 上归一化，"
        "而不是 `dim=0`。",
    },
    "no_softmax": {
        "en": "the context vectors weight the inputs by the attention "
        "weights, the softmax of the scores, not by the scores themselves.",
        "zh": "上下文向量用注意力权重（分数的 softmax）给输入加权，"
        "而不是直接用分数。",
    },
    "rows_are_queries": {
        "en": "row i of the weights belongs to query i and sums to 1: "
        "softmax over `dim=-1`, then `attn_weights @ inputs` (not "
        "`softmax(dim=0)`, not `attn_weights.T`).",
        "zh": "权重的第 i 行属于查询 i，且和为 1：先在 `dim=-1` 上做 softmax，"
        "再算 `attn_weights @ inputs`（不是 `softmax(dim=0)`，也不是 "
        "`attn_weights.T`）。",
    },
    "inputs_last": {
        "en": "the weights come first: `attn_weights @ inputs`, "
        "(n, n) @ (n, d_in) -> (n, d_in).",
        "zh": "权重在前：`attn_weights @ inputs`，(n, n) @ (n, d_in) -> (n, d_in)。",
    },
    "lib_scores": {
        "en": "attention_lib.attn_scores_all",
        "zh": "attention_lib.attn_scores_all",
    },
    "lib_softmax": {"en": "torch.softmax", "zh": "torch.softmax"},
    "lib_batched": {
        "en": "x @ x.transpose(-2, -1)",
        "zh": "x @ x.transpose(-2, -1)",
    },
    "lib_context": {
        "en": "attention_lib.context_vectors",
        "zh": "attention_lib.context_vectors",
    },
}


def _inputs(seed: int, batch: int | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    n, d = 2 + seed % 6, 1 + seed % 5
    shape = (n, d) if batch is None else (batch, n, d)
    return torch.rand(shape, generator=g)


def _all_scores(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        x = _inputs(seed)
        wrong = {
            "dims_product": lambda: x.T @ x,
            "elementwise": lambda: x * x,
            "one_query": lambda: x @ x[1],
        }
        out = call(answer, x, wrong=wrong)
        expect(out, attn_scores_all(x), "scores", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "scores", "shape": "(n, n)"}
    return [("shape", shape), ("values", values_on("lib_scores"))]


def _batched_scores(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        x = _inputs(seed, batch=2 + seed % 3)
        wrong = {"dot_t": lambda: x @ x.T}
        out = call(answer, x, wrong=wrong)
        expect(out, x @ x.transpose(-2, -1), "scores", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "scores", "shape": "(b, n, n)"}
    return [("shape", shape), ("values", values_on("lib_batched"))]


def _softmax(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def wrong(x: torch.Tensor) -> dict[str, Any]:
        row_max = x.max(dim=-1).values
        e = (x - x.max(dim=-1, keepdim=True).values).exp()
        return {
            "naive": lambda: x.exp() / x.exp().sum(dim=-1, keepdim=True),
            "global_max": lambda: _normalize((x - x.max()).exp()),
            "no_keepdim": lambda: _normalize((x - row_max).exp()),
            "col_max": lambda: _normalize(
                (x - x.max(dim=0, keepdim=True).values).exp()
            ),
            "sum_no_keepdim": lambda: e / e.sum(dim=-1),
            "by_sum": lambda: x / x.sum(dim=-1, keepdim=True),
            "dim0": lambda: torch.softmax(x, dim=0),
        }

    def once(x: torch.Tensor) -> None:
        out = call(answer, x, wrong=wrong(x))
        expect(out, torch.softmax(x, dim=-1), "weights", wrong(x))
        rows_sum_to_one(out, "dim0")

    for seed in range(COUNT):
        g = torch.Generator().manual_seed(seed)
        # Square scores first, as on the page, with row maxima that differ
        # from the column maxima (seed 0's 3 x 3), so that a missing keepdim
        # and a max over dim=0 give different weights; then wider ones.
        n = 3 + seed % 5
        once(torch.randn(n, n + seed % 3, generator=g) * 3)
    # Scores as large as a float32 exp overflows at, rows far apart, and
    # rows whose scores are far apart: only the row's largest score keeps
    # every exponent at or below 0. The last row has no score that
    # overflows on its own, so a shift by the mean or the smallest score is
    # not the naive softmax there.
    x = torch.tensor([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]])
    wide = torch.tensor(
        [[0.0, 100.0, -100.0], [1000.0, 0.0, -1000.0], [50.0, 0.0, -300.0]]
    )
    for big in (x, x.flip(0), wide, wide.flip(-1)):
        try:
            once(big)
        except WrongAnswerError as failure:
            # Right on every random input, nan or inf on large ones: a shift
            # that is not the row's largest score.
            if failure.problem == "not_finite" and failure.hint == "compare":
                failure.hint = "not_row_max"
            raise
    checks = [("values", values_on("lib_softmax")), ("rows", {})]
    return [*checks, ("large", {"size": 1000})]


def _normalize(e: torch.Tensor) -> torch.Tensor:
    return e / e.sum(dim=-1, keepdim=True)


def _context(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        x = _inputs(seed) + seed % 3  # not symmetric in the two dims
        scores = x @ x.T
        weights = torch.softmax(scores, dim=-1)
        wrong = {
            # The scores are symmetric: softmax over dim=0 is the
            # transpose of the right weights, one mistake in two spellings.
            "rows_are_queries": lambda: weights.T @ x,
            "no_softmax": lambda: scores @ x,
            "inputs_last": lambda: x.T @ weights,
        }
        out = call(answer, x, wrong=wrong)
        expect(out, weights @ x, "context", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "context", "shape": "(n, d_in)"}
    return [("shape", shape), ("values", values_on("lib_context"))]


EXERCISES = [
    Exercise("exercise-all-scores", _all_scores, WORDS),
    Exercise("exercise-batched-scores", _batched_scores, WORDS),
    Exercise("exercise-stable-softmax", _softmax, WORDS),
    Exercise("exercise-softmax-bug", _softmax, WORDS),
    Exercise("exercise-context-vectors", _context, WORDS),
    Exercise("exercise-context-bug", _context, WORDS),
]
