"""The exercises of the grouped-query attention chapter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.grouped_query import SDPA_HAS_GQA, GroupedQueryAttention
from attention_lib.heads import merge_heads, split_heads
from attention_lib.masks import causal_mask, masked_softmax
from torch import nn

from ._core import (
    Exercise,
    Later,
    WrongAnswerError,
    backward,
    call,
    each_seed,
    expect,
    later_calls,
    layers_match,
    module_from,
    seed_weights,
    values_on,
)
from ._messages import Messages, messages
from ._rules import Rules

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

WORDS: Messages = messages("grouped_query")

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


#: What the function is compared with: SDPA's own grouped-query attention,
#: or before torch 2.5, which lacks it, the library's explicit path.
_REFERENCE = "lib_sdpa" if SDPA_HAS_GQA else "lib_explicit"


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

    each_seed(once)
    shape = {"what": "context", "shape": "(b, num_heads, t, head_dim)"}
    values = values_on(_REFERENCE)
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
    def once(seed: int) -> Later:
        h, g = _HEADS[seed % len(_HEADS)]
        head_dim, d_in = 2 + seed % 2, 3 + seed % 3
        b, t, d_out = 1 + seed % 2, 2 + seed % 4, h * head_dim
        seed_weights(seed)
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
        # The right gradients, not only some: the library's.
        reference(x).sum().backward()
        layers_match(
            module, reference, ["W_query", "W_key", "W_value", "out_proj"]
        )
        later = [
            2 * torch.randn(size, tokens, d_in, generator=gen)
            for size, tokens in ((b + 1, t + 1), (b, t))
        ]
        # Called again after every seed's own checks, whose hints are
        # more precise.
        return module, reference, later, "output"

    for later in each_seed(once):
        later_calls(*later, eval_too=True)
    shape = {"what": "output", "shape": "(b, t, d_out)"}
    values = values_on("lib_gqa")
    checks = [("shape", shape), ("values", values), ("grad_values", {})]
    return [*checks, ("calls", {}), ("eval", {})]


EXERCISES = [
    Exercise(
        "exercise-gqa-attention",
        _gqa_function,
        WORDS,
        Rules(no_enable_gqa=True),
        reference=_REFERENCE,
    ),
    Exercise(
        "exercise-gqa-repeat-bug", _gqa_module, WORDS, reference="lib_gqa"
    ),
]
