"""The exercises of the grouped-query attention chapter."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.grouped_query import SDPA_HAS_GQA, GroupedQueryAttention
from attention_lib.heads import merge_heads, split_heads
from attention_lib.masks import causal_mask, masked_softmax
from torch import nn

from ._core import (
    CAUSAL_ATTENTION,
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
    variants,
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
    *,
    hidden: torch.Tensor | None = None,
    fill: float = -torch.inf,
    dim: int = -1,
    turn: Expand | None = None,
    zero_rows: bool = False,
) -> torch.Tensor:
    # The steps of the page, with `expand` the reader's way of giving the
    # keys and values as many heads as the queries, and the ways of getting
    # one of them wrong: the keys turned by `turn` (`.T`, `transpose(1, 2)`),
    # the ``hidden`` keys filled with ``fill``, the softmax over ``dim``, a
    # row with every key hidden zeros (SDPA) instead of nan.
    k, v = expand(k), expand(v)
    with warnings.catch_warnings():  # .T on 4 dimensions is deprecated
        warnings.simplefilter("ignore")
        scores = q @ (k.transpose(2, 3) if turn is None else turn(k))
    t = q.shape[2]
    if causal:
        mask = causal_mask(t) if hidden is None else hidden
        scores = scores.masked_fill(mask, fill)
    weights = torch.softmax(scores / scale, dim=dim)
    return (weights.nan_to_num(0.0) if zero_rows else weights) @ v


def _grouped(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    *,
    hidden: torch.Tensor | None = None,
    dim: int = -1,
    turn: Expand | None = None,
) -> torch.Tensor:
    # The same steps with no key/value head repeated, as the function
    # exercise asks: the query heads of a group one after another, (b, g,
    # group_size * t, head_dim), against the group's one key head, and the
    # ways of getting one of them wrong there: the keys turned by `turn`,
    # the ``hidden`` keys of the (group_size * t, t) scores, the softmax
    # over ``dim`` of those grouped scores.
    b, h, t, d = q.shape
    g = k.shape[1]
    grouped = q.reshape(b, g, h // g * t, d)
    with warnings.catch_warnings():  # .T on 4 dimensions is deprecated
        warnings.simplefilter("ignore")
        scores = grouped @ (k.transpose(2, 3) if turn is None else turn(k))
    mask = causal_mask(t).repeat(h // g, 1) if hidden is None else hidden
    scores = scores.masked_fill(mask, -torch.inf)
    weights = torch.softmax(scores / scale, dim=dim)
    return (weights @ v).reshape(b, h, t, d)


def _added(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, size: int
) -> torch.Tensor:
    """A float mask of ones and zeros, 1 where a key may be seen, added to
    the scaled scores (as `F.scaled_dot_product_attention` does): it hides
    nothing."""
    k, v = k.repeat_interleave(size, 1), v.repeat_interleave(size, 1)
    keep = (~causal_mask(q.shape[2])).to(q.dtype)
    scores = q @ k.mT / q.shape[-1] ** 0.5 + keep
    return torch.softmax(scores, dim=-1) @ v


def _expansions(h: int, g: int) -> dict[str, Expand]:
    size = h // g
    return {
        "right": lambda t: t.repeat_interleave(size, dim=1),
        "repeat": lambda t: t.repeat(1, size, 1, 1),
        "no_repeat": lambda t: t,
        "group_count": lambda t: t.repeat_interleave(g, dim=1),
    }


def _wrong(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    h: int,
    g: int,
    out: object = None,
    d_in: int | None = None,
) -> dict[str, list[Make]]:
    """The mistakes, each with its ways of being made. A wrong mask that
    hides every key of a row gives nan through masked_fill and softmax,
    zeros through SDPA: as the reader's ``out`` (None: nan)."""
    ways = _expansions(h, g)
    right, root, d = ways["right"], q.shape[-1] ** 0.5, q.shape[-1]
    t = q.shape[2]
    zero_rows = isinstance(out, torch.Tensor) and not out.isnan().any()

    def attend(scale: float = root, **how: Any) -> Make:
        return lambda: _attend(q, k, v, right, scale, **how)

    def hiding(hidden: torch.Tensor) -> Make:
        return attend(hidden=hidden, zero_rows=zero_rows)

    def grouped(**how: Any) -> Make:
        return lambda: _grouped(q, k, v, root, **how)

    ones = torch.ones(t, t, dtype=torch.bool)
    rows = h // g * t  # the grouped queries' rows
    return {
        "repeat": [lambda: _attend(q, k, v, ways["repeat"], root)],
        "no_repeat": [lambda: _attend(q, k, v, ways["no_repeat"], root)],
        "group_count": [lambda: _attend(q, k, v, ways["group_count"], root)],
        "no_causal": [attend(causal=False)],
        "scale_missing": [attend(scale=1.0)],
        "scale_by_d_k": [attend(scale=d)],
        # d_out, the number of tokens, of query heads, of key/value heads,
        # the keys' and values' width, and the module's d_in.
        "scale_wrong_size": [
            attend(scale=size**0.5)
            for size in (h * d, t, h, g, g * d, *([d_in] if d_in else []))
        ],
        "softmax_dim": [
            *(attend(dim=dim) for dim in (-2, 1, 0)),
            *(grouped(dim=dim) for dim in (-2, 1)),
        ],
        "mask_polarity": [hiding(~causal_mask(t))],
        "causal_diagonal": [hiding(ones.triu(0)), hiding(ones.triu(2))],
        "mask_fill_zero": [
            attend(fill=0.0),
            lambda: _added(q, k, v, h // g),
        ],
        "dot_T": [
            attend(turn=lambda y: y.T),
            attend(turn=lambda y: y.transpose(1, 2)),
            grouped(turn=lambda y: y.T),
            grouped(turn=lambda y: y.transpose(1, 2)),
        ],
        # The grouped queries' rows are group_size heads' t tokens: a mask
        # of (group_size * t, t) from triu hides the future of the first
        # head's only, and the (t, t) one does not fit them.
        "group_mask": [
            grouped(hidden=torch.ones(rows, t, dtype=torch.bool).triu(1)),
            grouped(hidden=causal_mask(t)),
        ],
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
        # The first input has 3 tokens: with 2, a mask one key too far hides
        # nothing, and `.T` raises the error that unrepeated heads raise.
        b, t, head_dim = 1 + seed % 2, 2 + (seed + 1) % 5, 2 + seed % 3
        gen = torch.Generator().manual_seed(seed)
        q = torch.randn(b, h, t, head_dim, generator=gen)
        k = torch.randn(b, g, t, head_dim, generator=gen)
        v = torch.randn(b, g, t, head_dim, generator=gen)
        args = (q.clone(), k.clone(), v.clone())
        out = call(answer, *args, wrong=variants(_wrong(q, k, v, h, g)))
        wrong = variants(_wrong(q, k, v, h, g, out))
        expect(out, _reference(q, k, v, h // g), "context", wrong)

    each_seed(once)
    shape = {"what": "context", "shape": "(b, num_heads, t, head_dim)"}
    values = values_on(_REFERENCE)
    checks = [("shape", shape), ("values", values), ("groups", {})]
    return [*checks, ("shared", {})]


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
        # The first input has 3 tokens, as the function's.
        b, t, d_out = 1 + seed % 2, 2 + (seed + 1) % 4, h * head_dim
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

        # `view` to the heads' shape without `transpose`: the tokens' vectors
        # cut in the wrong places, in every projection or in the queries';
        # or the heads merged without `transpose`.
        q_bad = q_lin.view(b, h, t, head_dim)
        k_bad, v_bad = (
            k_lin.view(b, g, t, head_dim),
            v_lin.view(b, g, t, head_dim),
        )
        views = [
            merged(lambda: _attend(q_bad, k_bad, v_bad, right, root)),
            merged(lambda: _attend(q_bad, k, v, right, root)),
            lambda: reference.out_proj(
                _attend(q, k, v, right, root).reshape(b, t, d_out)
            ).detach(),
        ]

        # The keys expanded one way and the values the other: query head i
        # then weighs one group's values by another group's keys.
        tiled, same = _expansions(h, g)["repeat"], lambda y: y
        mixed = [
            merged(lambda: _attend(q, right(k), tiled(v), same, root)),
            merged(lambda: _attend(q, tiled(k), right(v), same, root)),
        ]

        def wrong(out: object) -> dict[str, list[Make]]:
            ways = _wrong(q, k, v, h, g, out, d_in)
            made = {key: [merged(way) for way in ways[key]] for key in ways}
            return {**made, "view_no_transpose": views, "mixed_repeat": mixed}

        result = call(module, x, wrong=variants(wrong(None)))
        expect(result, expected, "output", variants(wrong(result)))
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


#: The function's heads come split; the module, which splits and merges
#: them, can also do it with `view` alone (view_no_transpose).
_MISTAKES = CAUSAL_ATTENTION

#: The function exercise shares the key/value heads without repeating them:
#: its hints for heads paired or counted wrong say how to share them.
_FUNCTION_WORDS: Messages = {
    **WORDS,
    "repeat": WORDS["tiled_shared"],
    "no_repeat": WORDS["unshared"],
}

EXERCISES = [
    Exercise(
        "exercise-gqa-attention",
        _gqa_function,
        _FUNCTION_WORDS,
        # Told once the results are right, so that a wrong result gets its
        # own hint first.
        Rules(no_enable_gqa=True, shared_kv=True),
        reference=_REFERENCE,
        mistakes=_MISTAKES,
    ),
    Exercise(
        "exercise-gqa-repeat-bug",
        _gqa_module,
        WORDS,
        reference="lib_gqa",
        mistakes=_MISTAKES | {"view_no_transpose"},
    ),
]
