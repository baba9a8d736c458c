"""The exercises of the scoring functions chapter."""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
from attention_lib.scoring import additive_scores, scaled_dot_product_scores

from ._core import (
    SCALING,
    Exercise,
    Ways,
    call,
    each_seed,
    expect,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("scoring")


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
        scores = (torch.tanh(both) @ w_v.T).squeeze(-1)

        def transposed_whole() -> torch.Tensor:
            # The page's `W_q @ q` for all the queries at once, with `.T`,
            # which reverses every dimension of a batch.
            q_t, k_t = (W_q @ queries.T).T, (W_k @ keys.T).T
            return (
                torch.tanh(q_t.unsqueeze(-2) + k_t.unsqueeze(-3)) @ w_v.T
            ).squeeze(-1)

        ways: Ways = {
            # Before "pairs": with a single query, q + k broadcasts and
            # gives these same scores.
            "squeeze_all": [lambda: (torch.tanh(both) @ w_v.T).squeeze()],
            "pairs": [lambda: (torch.tanh(q + k) @ w_v.T).squeeze(-1)],
            "transposed": [
                lambda: (
                    torch.tanh(q.unsqueeze(-3) + k.unsqueeze(-2)) @ w_v.T
                ).squeeze(-1)
            ],
            "layout": [
                lambda: (
                    torch.tanh(
                        (queries @ W_q).unsqueeze(-2)
                        + (keys @ W_k).unsqueeze(-3)
                    )
                    @ w_v.T
                ).squeeze(-1)
            ],
            # W_q on the keys and W_k on the queries: an error unless
            # d_q == d_k, whichever projection comes first.
            "swapped_weights": [
                lambda: (
                    torch.tanh(
                        (queries @ W_k.T).unsqueeze(-2)
                        + (keys @ W_q.T).unsqueeze(-3)
                    )
                    @ w_v.T
                ).squeeze(-1),
                lambda: (keys @ W_q.T, queries @ W_k.T)[0],
            ],
            # The page's one matrix of queries: new axes counted from the
            # front, which a batch in front moves.
            "axes_from_front": [
                lambda: (
                    torch.tanh(q.unsqueeze(1) + k.unsqueeze(0)) @ w_v.T
                ).squeeze(-1)
            ],
            "no_tanh": [lambda: (both @ w_v.T).squeeze(-1)],
            "tanh_place": [
                lambda: torch.tanh(both @ w_v.T).squeeze(-1),
                lambda: (torch.relu(both) @ w_v.T).squeeze(-1),
                lambda: (torch.sigmoid(both) @ w_v.T).squeeze(-1),
            ],
            "no_w_v": [lambda: torch.tanh(both).sum(dim=-1)],
            "no_squeeze": [lambda: torch.tanh(both) @ w_v.T],
            "dot_T": [transposed_whole],
            # Additive scores scaled as if they were dot products: by the
            # root of the hidden size, or of a key's or a query's.
            "scale_extra": [
                functools.partial(torch.div, scores, math.sqrt(size))
                for size in (h, d_k, d_q)
            ],
        }
        args = (queries, keys, W_q, W_k, w_v)
        out = call(answer, *args, wrong=variants(ways))
        expected = additive_scores(*args)
        expect(out, expected, "scores", variants(ways))

    each_seed(once)
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

        # No scaling first: the root of a size of 1 (a single query) scales
        # nothing either.
        ways: Ways = {
            "scale_missing": [lambda: dots],
            "scale_by_d_k": [lambda: dots / d_k],
            # The root of another size than a key's: a dimension counted
            # from the front (which 2-D keys may not have: `keys.shape[2]`
            # raises there), the number of keys or of queries.
            "scale_wrong_size": [
                lambda: dots / math.sqrt(keys.shape[1]),
                lambda: dots / math.sqrt(keys.shape[2]),
                lambda: dots / math.sqrt(keys.shape[-2]),
                lambda: dots / math.sqrt(queries.shape[-2]),
            ],
            "dot_T": [lambda: queries @ swapped_wrong() / math.sqrt(d_k)],
        }
        out = call(answer, queries, keys, wrong=variants(ways))
        expected = scaled_dot_product_scores(queries, keys)
        expect(out, expected, "scores", variants(ways))

    each_seed(once)
    shape = {"what": "scores", "shape": "(..., n_q, n_k)"}
    values = values_on("lib_scaled")
    return [("shape", shape), ("values", values), ("batched", {})]


EXERCISES = [
    Exercise(
        "exercise-additive-scores",
        _additive,
        WORDS,
        Rules(no_loop=True, functions={"additive_scores": additive_scores}),
        reference="lib_additive",
        mistakes=frozenset({"scale_extra", "dot_T"}),
    ),
    Exercise(
        "exercise-scaled-scores-bug",
        _scaled,
        WORDS,
        reference="lib_scaled",
        mistakes=SCALING | {"dot_T"},
    ),
]
