"""The exercises of the grouped-query attention chapter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..grouped_query import SDPA_HAS_GQA, GroupedQueryAttention
from ..heads import merge_heads, split_heads
from ..masks import causal_mask, masked_softmax
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    backward,
    call,
    expect,
    module_from,
    values_on,
)

#: (num_heads, num_kv_groups), first those where `repeat` and
#: `repeat_interleave` differ and group_size != num_kv_groups, then MQA and
#: MHA, which a right answer must handle too.
_HEADS = [(6, 2), (8, 4), (6, 3), (12, 4), (8, 2), (12, 3), (4, 1), (4, 4)]

_VIEW_SPLIT = {
    "en": "`view(b, num_heads, t, head_dim)` cuts the tokens' vectors in "
    "the wrong places: view as `(b, t, num_heads, head_dim)`, then "
    "`transpose(1, 2)`.",
    "zh": "`view(b, num_heads, t, head_dim)` 把词元的向量切错了位置："
    "先 view 成 `(b, t, num_heads, head_dim)`，再 `transpose(1, 2)`。",
}

WORDS: Messages = {
    "lib_sdpa": {
        "en": "F.scaled_dot_product_attention(..., is_causal=True, "
        "enable_gqa=True)",
        "zh": "F.scaled_dot_product_attention(..., is_causal=True, "
        "enable_gqa=True)",
    },
    "lib_explicit": {
        "en": "causal attention on keys and values repeated with "
        "repeat_interleave",
        "zh": "用 repeat_interleave 重复键和值之后的因果注意力",
    },
    "lib_gqa": {
        "en": "attention_lib.GroupedQueryAttention with the same weights",
        "zh": "权重相同的 attention_lib.GroupedQueryAttention",
    },
    "groups": {
        "en": "2 to 4 key/value heads for 6 to 12 query heads, where "
        "`repeat` and `repeat_interleave` differ, then MQA and MHA",
        "zh": "6 到 12 个查询头配 2 到 4 个键/值头（此时 `repeat` 与 "
        "`repeat_interleave` 的结果不同），以及 MQA 和 MHA",
    },
    "repeat": {
        "en": "`repeat` tiles the heads, [K0, K1, K0, K1], and pairs query "
        "heads with another group's key head; query head i uses key/value "
        "head i // group_size: `keys.repeat_interleave(group_size, dim=1)`, "
        "[K0, K0, K1, K1].",
        "zh": "`repeat` 把头整体平铺成 [K0, K1, K0, K1]，让查询头配上了别的组的键头；"
        "查询头 i 使用的是键/值头 i // group_size："
        "`keys.repeat_interleave(group_size, dim=1)`，即 [K0, K0, K1, K1]。",
    },
    "no_repeat": {
        "en": "the keys and values have num_kv_groups heads, the queries "
        "num_heads: repeat each key/value head for the query heads of its "
        "group, `keys.repeat_interleave(group_size, dim=1)`.",
        "zh": "键和值只有 num_kv_groups 个头，查询却有 num_heads 个："
        "要把每个键/值头为本组的查询头重复一遍，"
        "`keys.repeat_interleave(group_size, dim=1)`。",
    },
    "group_count": {
        "en": "repeat each key/value head group_size = num_heads // "
        "num_kv_groups times, not num_kv_groups times.",
        "zh": "每个键/值头要重复 group_size = num_heads // num_kv_groups 次，"
        "而不是 num_kv_groups 次。",
    },
    "no_causal": {
        "en": "a token must not see the tokens after it: fill the scores "
        "above the diagonal with `-torch.inf` before the softmax, "
        "`torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`.",
        "zh": "词元不能看到它之后的词元：在 softmax 之前把对角线以上的分数填成 "
        "`-torch.inf`，"
        "`torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`。",
    },
    "scale_d_k": {
        "en": "your weights are too flat: divide the scores by "
        "`head_dim ** 0.5`, the square root of d_k, not by d_k.",
        "zh": "你的注意力权重太平坦了：分数要除以 d_k 的平方根 "
        "`head_dim ** 0.5`，而不是 d_k 本身。",
    },
    "view_split": _VIEW_SPLIT,
    "view_split_queries": _VIEW_SPLIT,
    "view_merge": {
        "en": "merge the heads back with `transpose(1, 2)` before the "
        "`reshape(b, t, d_out)`: without it the rows mix tokens and heads.",
        "zh": "合并各个头时，要先 `transpose(1, 2)`，再 `reshape(b, t, d_out)`："
        "少了这一步，每一行就混进了不同词元和不同头的数值。",
    },
    "gqa_names": {
        "en": "keep the page's names and sizes: W_query (d_in -> d_out), "
        "W_key and W_value (d_in -> num_kv_groups * head_dim), out_proj "
        "(d_out -> d_out), so that the check can give your module the "
        "library's weights.",
        "zh": "沿用页面上的名字和尺寸：W_query（d_in -> d_out），W_key 和 "
        "W_value（d_in -> num_kv_groups * head_dim），out_proj（d_out -> "
        "d_out），这样检查时才能把库中模块的权重放进你的模块。",
    },
}

Expand = Callable[[torch.Tensor], torch.Tensor]
Make = Callable[[], torch.Tensor]


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    expand: Expand,
    scale: float,
    causal: bool = True,
) -> torch.Tensor:
    # The steps of the page, with `expand` the reader's way of giving the
    # keys and values as many heads as the queries.
    k, v = expand(k), expand(v)
    scores = q @ k.transpose(2, 3)  # (b, h, t, t)
    t = q.shape[2]
    if causal:
        scores = scores.masked_fill(causal_mask(t), -torch.inf)
    return torch.softmax(scores / scale, dim=-1) @ v


def _expansions(h: int, g: int) -> dict[str, Expand]:
    size = h // g
    return {
        "right": lambda t: t.repeat_interleave(size, dim=1),
        "repeat": lambda t: t.repeat(1, size, 1, 1),
        "no_repeat": lambda t: t,
        "group_count": lambda t: t.repeat_interleave(g, dim=1),
    }


def _wrong(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, h: int, g: int
) -> dict[str, Make]:
    ways = _expansions(h, g)
    right, root, d = ways["right"], q.shape[-1] ** 0.5, q.shape[-1]
    return {
        "repeat": lambda: _attend(q, k, v, ways["repeat"], root),
        "no_repeat": lambda: _attend(q, k, v, ways["no_repeat"], root),
        "group_count": lambda: _attend(q, k, v, ways["group_count"], root),
        "no_causal": lambda: _attend(q, k, v, right, root, causal=False),
        "scale_d_k": lambda: _attend(q, k, v, right, d),
    }


def _reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, group_size: int
) -> torch.Tensor:
    if SDPA_HAS_GQA:
        return F.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=True
        )
    # torch older than 2.5: the library's explicit path.
    k = k.repeat_interleave(group_size, dim=1)
    v = v.repeat_interleave(group_size, dim=1)
    scores = q @ k.transpose(2, 3) / q.shape[-1] ** 0.5
    return masked_softmax(scores, causal_mask(q.shape[2])) @ v


def _gqa_function(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        h, g = _HEADS[seed % len(_HEADS)]
        b, t, head_dim = 1 + seed % 2, 2 + seed % 5, 2 + seed % 3
        gen = torch.Generator().manual_seed(seed)
        q = torch.randn(b, h, t, head_dim, generator=gen)
        k = torch.randn(b, g, t, head_dim, generator=gen)
        v = torch.randn(b, g, t, head_dim, generator=gen)
        wrong = _wrong(q, k, v, h, g)
        out = call(answer, q.clone(), k.clone(), v.clone(), wrong=wrong)
        expect(out, _reference(q, k, v, h // g), "context", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "context", "shape": "(b, num_heads, t, head_dim)"}
    reference = "lib_sdpa" if SDPA_HAS_GQA else "lib_explicit"
    values = values_on(reference)
    return [("shape", shape), ("values", values), ("groups", {})]


def _copy_linear(module: nn.Module, name: str, source: nn.Linear) -> None:
    layer = getattr(module, name, None)
    d_out, d_in = source.weight.shape
    if (
        not isinstance(layer, nn.Linear)
        or layer.weight.shape != source.weight.shape
    ):
        raise WrongAnswerError(
            "no_linear", "gqa_names", name=name, d_in=d_in, d_out=d_out
        )
    with torch.no_grad():
        layer.weight.copy_(source.weight)
        if layer.bias is not None:
            layer.bias.zero_()


def _gqa_module(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        h, g = _HEADS[seed % len(_HEADS)]
        head_dim, d_in = 2 + seed % 2, 3 + seed % 3
        b, t, d_out = 1 + seed % 2, 2 + seed % 4, h * head_dim
        torch.manual_seed(seed)
        module = module_from(answer, d_in, d_out, h, g)
        reference = GroupedQueryAttention(d_in, d_out, 0.0, h, g)
        for name in ("W_query", "W_key", "W_value", "out_proj"):
            _copy_linear(module, name, getattr(reference, name))
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(b, t, d_in, generator=gen)
        with torch.no_grad():
            expected = reference(x)
            q_lin = reference.W_query(x)  # (b, t, d_out)
            k_lin, v_lin = reference.W_key(x), reference.W_value(x)
            q, k, v = (
                split_heads(q_lin, h),
                split_heads(k_lin, g),
                split_heads(v_lin, g),
            )
        right, root = _expansions(h, g)["right"], head_dim**0.5

        def merged(make: Make) -> Make:
            return lambda: reference.out_proj(merge_heads(make())).detach()

        wrong = {
            key: merged(make) for key, make in _wrong(q, k, v, h, g).items()
        }
        # `view` to the heads' shape without `transpose`: the tokens' vectors
        # cut in the wrong places, in every projection or in the queries'.
        q_bad = q_lin.view(b, h, t, head_dim)
        k_bad, v_bad = (
            k_lin.view(b, g, t, head_dim),
            v_lin.view(b, g, t, head_dim),
        )
        wrong["view_split"] = merged(
            lambda: _attend(q_bad, k_bad, v_bad, right, root)
        )
        wrong["view_split_queries"] = merged(
            lambda: _attend(q_bad, k, v, right, root)
        )
        # The heads merged without `transpose`.
        wrong["view_merge"] = lambda: reference.out_proj(
            _attend(q, k, v, right, root).reshape(b, t, d_out)
        ).detach()
        result = call(module, x, wrong=wrong)
        expect(result, expected, "output", wrong)
        backward(result, module, "output")

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "output", "shape": "(b, t, d_out)"}
    values = values_on("lib_gqa")
    return [("shape", shape), ("values", values), ("grad", {})]


EXERCISES = [
    Exercise("exercise-gqa-attention", _gqa_function, WORDS),
    Exercise("exercise-gqa-repeat-bug", _gqa_module, WORDS),
]
