"""The exercises of the self-attention chapters: trainable weights and
masks."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..masks import causal_mask, masked_softmax, padding_mask
from ..self_attention import SelfAttentionV1, SelfAttentionV2
from ._core import (
    Exercise,
    Messages,
    backward,
    call,
    copy_weights,
    expect,
    module_from,
    rows_sum_to_one,
)

COUNT = 20

WORDS: Messages = {
    "output": {"en": "outputs", "zh": "输出"},
    "weights": {"en": "attention weights", "zh": "注意力权重"},
    "v1_output": {
        "en": "outputs of the SelfAttentionV1",
        "zh": "SelfAttentionV1 的输出",
    },
    "lib_v2": {
        "en": "attention_lib.SelfAttentionV2 with the same weights",
        "zh": "权重相同的 attention_lib.SelfAttentionV2",
    },
    "lib_v2_copied": {
        "en": "the SelfAttentionV2 they were copied from",
        "zh": "被复制权重的 SelfAttentionV2",
    },
    "lib_causal": {
        "en": "masked_softmax(attn_scores, causal_mask(n))",
        "zh": "masked_softmax(attn_scores, causal_mask(n))",
    },
    "lib_combined": {
        "en": "masked_softmax with causal_mask | padding_mask",
        "zh": "使用 causal_mask | padding_mask 的 masked_softmax",
    },
    "scale_d_k": {
        # Dividing by d_k shrinks the scores by another sqrt(d_k): the
        # weights come out flatter than they should, not sharper.
        "en": "your weights are too flat: divide the scores by "
        "`keys.shape[-1] ** 0.5`, the square root of d_k, not by d_k.",
        "zh": "你的注意力权重太平坦了：分数要除以 d_k 的平方根 "
        "`keys.shape[-1] ** 0.5`，而不是 d_k 本身。",
    },
    "no_scale": {
        "en": "the scores are not scaled: divide them by "
        "`keys.shape[-1] ** 0.5` before the softmax.",
        "zh": "分数没有缩放：在 softmax 之前把它们除以 `keys.shape[-1] ** 0.5`。",
    },
    "keys_from_query": {
        "en": "the keys come from `self.W_key(x)`; yours are the queries "
        "again (`self.W_query(x)`).",
        "zh": "键应该来自 `self.W_key(x)`；你的键其实又是查询"
        "（`self.W_query(x)`）。",
    },
    "values_from_key": {
        "en": "the values come from `self.W_value(x)`, not from W_key.",
        "zh": "值应该来自 `self.W_value(x)`，而不是 W_key。",
    },
    "dim0": {
        "en": "softmax over `dim=-1`: each query's weights over the keys "
        "must sum to 1.",
        "zh": "softmax 要在 `dim=-1` 上做：每个查询对所有键的权重之和必须是 1。",
    },
    "transpose": {
        "en": "nn.Linear keeps its weight as (d_out, d_in) and "
        "SelfAttentionV1's parameters are (d_in, d_out): copy the "
        "transposes, `sa_v2.W_query.weight.T`.",
        "zh": "nn.Linear 的权重形状是 (d_out, d_in)，而 SelfAttentionV1 的参数是 "
        "(d_in, d_out)：要复制转置，即 `sa_v2.W_query.weight.T`。",
    },
    "assign": {
        "en": "a parameter cannot be replaced by a plain tensor: copy into "
        "it inside `torch.no_grad()`, "
        "`sa_v1.W_query.copy_(sa_v2.W_query.weight.T)`.",
        "zh": "不能用普通张量替换参数：在 `torch.no_grad()` 中把值复制进去，"
        "`sa_v1.W_query.copy_(sa_v2.W_query.weight.T)`。",
    },
    "swapped": {
        "en": "each parameter takes its namesake: W_query from W_query, "
        "W_key from W_key, W_value from W_value.",
        "zh": "每个参数要从同名的层复制：W_query 对 W_query，W_key 对 W_key，"
        "W_value 对 W_value。",
    },
    "in_place": {
        "en": "change sa_v1 itself (copy into its parameters); a new "
        "module made inside the function is lost when it returns.",
        "zh": "要修改 sa_v1 本身（把值复制进它的参数）；"
        "在函数里新建的模块在函数返回后就丢失了。",
    },
    "inverted": {
        "en": "the mask hides the past instead of the future: True must "
        "mark the keys after the query, "
        "`torch.triu(torch.ones(n, n), diagonal=1).bool()`.",
        "zh": "这个掩码遮住的是过去而不是未来：True 应该标记查询之后的键，"
        "`torch.triu(torch.ones(n, n), diagonal=1).bool()`。",
    },
    "diagonal": {
        "en": "each token must see itself: `diagonal=1`; with "
        "`diagonal=0` the first row has nothing left and becomes nan.",
        "zh": "每个词元都必须能看到自己：用 `diagonal=1`；用 `diagonal=0` "
        "时第一行什么都不剩，结果是 nan。",
    },
    "zero_fill": {
        "en": "a masked score of 0 still gets weight `exp(0)`: fill the "
        "masked scores with `-torch.inf`.",
        "zh": "被遮蔽的分数填成 0 仍然会得到权重 `exp(0)`：要用 `-torch.inf` 填充。",
    },
    "no_renorm": {
        "en": "after zeroing the future weights, the rows no longer sum to "
        "1: renormalize them, or fill the scores with `-torch.inf` before "
        "the softmax.",
        "zh": "把未来的权重置零后，每一行之和不再是 1：要重新归一化，"
        "或者在 softmax 之前把分数填成 `-torch.inf`。",
    },
    "and": {
        "en": "a key is hidden when either mask hides it: combine "
        "True-means-masked masks with `|`, not `&`.",
        "zh": "只要任意一个掩码遮住了某个键，它就被遮住：True 表示遮蔽的掩码要用 "
        "`|` 组合，而不是 `&`。",
    },
}


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    dim: int = -1,
) -> torch.Tensor:
    return torch.softmax(q @ k.T / scale, dim=dim) @ v


def _self_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        d_in, d_out, n = 2 + seed % 3, 1 + seed % 4, 2 + seed % 5
        torch.manual_seed(seed)
        module = module_from(answer, d_in, d_out)
        reference = SelfAttentionV2(d_in, d_out)
        names = ("W_query", "W_key", "W_value")
        copy_weights(module, reference, names, d_in, d_out)
        x = torch.rand(n, d_in, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            q = reference.W_query(x)
            k = reference.W_key(x)
            v = reference.W_value(x)
        root = math.sqrt(d_out)
        wrong = {
            "scale_d_k": lambda: _attend(q, k, v, d_out),
            "no_scale": lambda: _attend(q, k, v, 1.0),
            "keys_from_query": lambda: _attend(q, q, v, root),
            "values_from_key": lambda: _attend(q, k, k, root),
            "dim0": lambda: _attend(q, k, v, root, dim=0),
        }
        out = call(module, x, wrong=wrong)
        with torch.no_grad():
            expected = reference(x)
        expect(out, expected.detach(), "output", wrong)
        backward(out, module, "output")

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "output", "shape": "(n, d_out)"}
    values = {"reference": "lib_v2", "count": COUNT}
    return [("shape", shape), ("values", values), ("grad", {})]


def _copy_v2_into_v1(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    names = ("W_query", "W_key", "W_value")

    def once(seed: int) -> None:
        d_in, d_out, n = 2 + seed % 3, 1 + seed % 4, 2 + seed % 5
        if d_in == d_out:
            d_out += 1  # a square weight would hide a missing transpose
        torch.manual_seed(seed)
        sa_v1, sa_v2 = (
            SelfAttentionV1(d_in, d_out),
            SelfAttentionV2(d_in, d_out),
        )
        x = torch.rand(n, d_in, generator=torch.Generator().manual_seed(seed))

        def copied(pairs: dict[str, torch.Tensor]) -> torch.Tensor:
            v1 = SelfAttentionV1(d_in, d_out)
            with torch.no_grad():
                for name, value in pairs.items():
                    getattr(v1, name).copy_(value)
            return v1(x).detach()

        def plain(name: str) -> torch.Tensor:
            return getattr(sa_v2, name).weight.T

        wrong = {
            "transpose": lambda: copied(
                {name: getattr(sa_v2, name).weight for name in names}
            ),
            "assign": lambda: setattr(
                SelfAttentionV1(d_in, d_out), "W_query", plain("W_query")
            ),
            "swapped": lambda: copied(
                {
                    "W_query": plain("W_key"),
                    "W_key": plain("W_query"),
                    "W_value": plain("W_value"),
                }
            ),
            "in_place": lambda: sa_v1(x).detach(),
        }
        before = sa_v1(x).detach()
        call(answer, sa_v1, sa_v2, wrong=wrong)
        wrong["in_place"] = lambda: before
        with torch.no_grad():
            expect(sa_v1(x), sa_v2(x), "v1_output", wrong)

    for seed in range(COUNT):
        once(seed)
    values = {"reference": "lib_v2_copied", "count": COUNT}
    return [("values", values)]


def _causal_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        n = 2 + seed % 6
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(n, n, generator=g)
        future = causal_mask(n)
        ones = torch.ones(n, n)
        inf = -torch.inf
        weights = torch.softmax(scores, dim=-1)
        wrong = {
            "inverted": lambda: torch.softmax(
                scores.masked_fill(torch.tril(ones, -1).bool(), inf), dim=-1
            ),
            "diagonal": lambda: torch.softmax(
                scores.masked_fill(torch.triu(ones).bool(), inf), dim=-1
            ),
            "zero_fill": lambda: torch.softmax(
                scores.masked_fill(future, 0.0), dim=-1
            ),
            "no_renorm": lambda: weights.masked_fill(future, 0.0),
            "dim0": lambda: torch.softmax(
                scores.masked_fill(future, inf), dim=0
            ),
        }
        out = call(answer, scores.clone(), wrong=wrong)
        expected = masked_softmax(scores, future)
        expect(out, expected, "weights", wrong)
        rows_sum_to_one(out, "no_renorm")

    for seed in range(COUNT):
        once(seed)
    values = {"reference": "lib_causal", "count": COUNT}
    return [("values", values), ("rows", {}), ("future", {})]


def _combined_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        n = 2 + seed % 6
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(n, n, generator=g)
        valid_len = 1 + seed % n
        causal = causal_mask(n)
        padding = padding_mask(torch.tensor([valid_len]), n)[0]  # (1, n)
        wrong = {
            "and": lambda: masked_softmax(scores, causal & padding),
        }
        out = call(answer, scores.clone(), valid_len, wrong=wrong)
        expected = masked_softmax(scores, causal | padding)
        expect(out, expected, "weights", wrong)

    for seed in range(COUNT):
        once(seed)
    values = {"reference": "lib_combined", "count": COUNT}
    return [("values", values)]


EXERCISES = [
    Exercise("exercise-self-attention", _self_attention, WORDS),
    Exercise("exercise-copy-v2-into-v1", _copy_v2_into_v1, WORDS),
    Exercise("exercise-keys-bug", _self_attention, WORDS),
    Exercise("exercise-causal-weights", _causal_weights, WORDS),
    Exercise("exercise-combined-mask-bug", _combined_weights, WORDS),
]
