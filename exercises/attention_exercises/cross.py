"""The exercises of the cross-attention chapter."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.cross import CrossAttention
from attention_lib.dot_product import DotProductAttention

from ._core import (
    SCALING,
    Exercise,
    Ways,
    attend,
    call,
    each_seed,
    expect,
    hinted,
    seed_weights,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

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

WORDS: Messages = messages("cross")


def _cross_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # Two lengths that differ, so that taking a tensor from the wrong
        # sequence shows; d_kq >= 2, so that d_k and its root differ; d_in
        # neither d_kq nor its square, so that scaling by the root of d_in
        # shows and is not scaling by d_kq.
        t1, d_kq, d_v = 2 + seed % 4, 2 + seed % 3, 1 + seed % 4
        t2, d_in = t1 + 1 + seed % 3, d_kq + 1 + 2 * (seed % 2)
        seed_weights(seed)
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

        def transposed(keys_t: torch.Tensor) -> torch.Tensor:
            # The keys transposed counted from the front (`.T`, which is
            # right for unbatched keys, or `transpose(0, 1)`).
            return torch.softmax(q1 @ keys_t / root, dim=-1) @ v2

        ways: Ways = {
            "kv_from_x1": [lambda: attend(q1, k1, v1, root)],
            "queries_from_x2": [lambda: attend(q2, k2, v2, root)],
            "keys_from_x1": [lambda: attend(q1, k1, v2, root)],
            "values_from_x1": [lambda: attend(q1, k2, v1, root)],
            "scale_by_d_k": [lambda: attend(q1, k2, v2, d_kq)],
            # The root of the inputs' size, or of a number of tokens.
            "scale_wrong_size": [
                functools.partial(attend, q1, k2, v2, size**0.5)
                for size in (d_in, t1, t2)
            ],
            "scale_missing": [lambda: attend(q1, k2, v2, 1.0)],
            "dot_T": [
                lambda: transposed(k2.T),
                lambda: transposed(k2.transpose(0, 1)),
            ],
            # Over the queries (dim=-2, or dim=1 with a batch), or over the
            # batch.
            "softmax_dim": [
                lambda: attend(q1, k2, v2, root, dim=-2),
                lambda: attend(q1, k2, v2, root, dim=0),
            ],
        }
        out = call(answer, x_1, x_2, *weights, wrong=variants(ways))
        with torch.no_grad():
            expected = reference(x_1, x_2)
        expect(out, expected, "context", variants(ways))

    each_seed(once)
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

        def weighted(
            mask: torch.Tensor,
            fill: float,
            after: Callable[[torch.Tensor], torch.Tensor] = lambda w: w,
        ) -> torch.Tensor:
            # `after`: what the answer does to the weights after the softmax.
            weights = torch.softmax(scores.masked_fill(mask, fill), -1)
            return after(weights) @ values

        def scaled(scale: float, dim: int = -1) -> torch.Tensor:
            # The padding hidden, the scores scaled by another number, or
            # the softmax over another dimension.
            hidden = (queries @ keys.transpose(1, 2) / scale).masked_fill(
                padding[:, None, :], inf
            )
            return torch.softmax(hidden, dim=dim) @ values

        def transposed(keys_t: torch.Tensor) -> torch.Tensor:
            # The keys transposed counted from the front, in the page's
            # order: the product and its scaling, the mask, the softmax.
            swapped = queries @ keys_t / d**0.5
            swapped = swapped.masked_fill(padding[:, None, :], inf)
            return torch.softmax(swapped, dim=-1) @ values

        root = d**0.5
        late = torch.arange(t2) > valid_lens[:, None]  # padding one key late
        ways: Ways = {
            "padding_from": [lambda: weighted(late[:, None, :], inf)],
            # The rows of queries hidden, and the nan of a row whose every
            # score is -inf turned to 0 after the softmax (`nan_to_num`).
            "mask_queries": [
                lambda: weighted(padding[:, :, None], inf),
                lambda: weighted(padding[:, :, None], inf, torch.nan_to_num),
            ],
            "mask_queries_finite": [
                lambda: weighted(padding[:, :, None], low),
            ],
            # The new axis in front of the batch (`unsqueeze(0)`), or none:
            # (1, b, t2) lines the batch up with the queries.
            "mask_batch_axis": [
                lambda: weighted(padding[None], inf),
                lambda: weighted(padding[None], low),
            ],
            # The real keys hidden: True read as a valid key, or the
            # padding mask given to SDPA, which reads True as "may attend".
            "mask_polarity": [
                lambda: weighted(real[:, None, :], inf),
                lambda: weighted(real[:, None, :], low),
                lambda: F.scaled_dot_product_attention(
                    queries, keys, values, attn_mask=padding[:, None, :]
                ),
            ],
            "no_mask": [lambda: torch.softmax(scores, dim=-1) @ values],
            # A fill of 0, or the padding's weights zeroed after a softmax
            # over every key.
            "mask_fill_zero": [
                lambda: weighted(padding[:, None, :], 0.0),
                lambda: (
                    torch.softmax(scores, dim=-1).masked_fill(
                        padding[:, None, :], 0.0
                    )
                    @ values
                ),
            ],
            "scale_missing": [lambda: scaled(1.0)],
            "scale_by_d_k": [lambda: scaled(d)],
            # The root of a number of tokens (t1 or t2), not of a key's size.
            "scale_wrong_size": [
                functools.partial(scaled, size**0.5) for size in (t2, t1)
            ],
            "softmax_dim": [
                functools.partial(scaled, root, dim) for dim in (1, 0)
            ],
            "dot_T": [
                lambda: transposed(keys.T),
                lambda: transposed(keys.transpose(0, 1)),
            ],
        }
        args = (queries, keys, values, valid_lens.clone())
        out = call(answer, *args, wrong=variants(ways))
        expected = DotProductAttention(0.0)(queries, keys, values, valid_lens)
        expect(out, expected, "context", variants(ways))
        # The padding keys turned towards each sequence's first query, so
        # that its scores for them are 300, far above the real keys': the
        # context vectors stay the same, unless padding takes part in a
        # softmax.
        leading = keys.clone()
        for i in range(b):
            q = queries[i, 0]
            leading[i, padding[i]] = (
                300 * d**0.5 * q / q.dot(q).clamp_min(1e-6)
            )
        args = (queries, leading, values, valid_lens.clone())
        out = call(answer, *args)
        with hinted("renormalize"):
            expect(out, expected, "context")

    each_seed(once)
    shape = {"what": "context", "shape": "(b, t1, d_v)"}
    values = values_on("lib_padded")
    return [("shape", shape), ("values", values)]


EXERCISES = [
    Exercise(
        "exercise-cross-attention",
        _cross_attention,
        WORDS,
        Rules(functions={"CrossAttention": CrossAttention.forward}),
        reference="lib_cross",
        mistakes=SCALING | {"dot_T", "softmax_dim"},
    ),
    Exercise(
        "exercise-cross-padding-bug",
        _padded_attention,
        WORDS,
        reference="lib_padded",
        mistakes=SCALING
        | {"dot_T", "mask_fill_zero", "mask_polarity", "softmax_dim"},
    ),
]
