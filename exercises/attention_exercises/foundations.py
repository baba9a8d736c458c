"""The exercises of the first chapters: attention scores, attention weights
and context vectors, without trainable weights."""

from __future__ import annotations

from typing import Any

import torch
from attention_lib.weight_free import (
    attn_scores_all,
    attn_scores_all_loop,
    context_vectors,
)

from ._core import (
    Exercise,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    rows_sum_to_one,
    values_on,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("foundations")

#: The names of torch's softmax functions (torch.softmax, F.softmax,
#: Tensor.softmax, nn.Softmax's, log_softmax, torch.special's, softmin of the
#: negated scores) and of the operators they run.
SOFTMAXES = (
    "softmax",
    "log_softmax",
    "special_softmax",
    "special_log_softmax",
    "softmin",
    "safe_softmax",
)


def _inputs(seed: int, batch: int | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # Two seeds in a row share a shape, with other values: an answer that
    # remembers its result by shape shows.
    n, d = 2 + (seed // 2) % 6, 1 + (seed // 2) % 5
    shape = (n, d) if batch is None else (batch, n, d)
    # Negative values too: an answer that takes an absolute value shows.
    return 2 * torch.rand(shape, generator=g) - 1


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

    each_seed(once)
    shape = {"what": "scores", "shape": "(n, n)"}
    return [("shape", shape), ("values", values_on("lib_scores"))]


def _batched_scores(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        x = _inputs(seed, batch=2 + (seed // 2) % 3)
        wrong = {"dot_t": lambda: x @ x.T}
        out = call(answer, x, wrong=wrong)
        expect(out, x @ x.transpose(-2, -1), "scores", wrong)

    each_seed(once)
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

    def random(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        # Square scores first, as on the page, with row maxima that differ
        # from the column maxima (seed 0's 3 x 3), so that a missing keepdim
        # and a max over dim=0 give different weights; then wider ones.
        n = 3 + seed % 5
        once(torch.randn(n, n + seed % 3, generator=g) * 3)

    each_seed(random)
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
            # The scaling of later chapters, a step too early here.
            "scale_not_here": lambda: (
                torch.softmax(scores / x.shape[-1] ** 0.5, dim=-1) @ x
            ),
        }
        out = call(answer, x, wrong=wrong)
        expect(out, weights @ x, "context", wrong)

    each_seed(once)
    shape = {"what": "context", "shape": "(n, d_in)"}
    return [("shape", shape), ("values", values_on("lib_context"))]


EXERCISES = [
    Exercise(
        "exercise-all-scores",
        _all_scores,
        WORDS,
        Rules(
            no_loop=True,
            functions={
                "attn_scores_all": attn_scores_all,
                "attn_scores_all_loop": attn_scores_all_loop,
            },
        ),
        reference="lib_scores",
    ),
    Exercise(
        "exercise-batched-scores",
        _batched_scores,
        WORDS,
        reference="lib_batched",
    ),
    Exercise(
        "exercise-stable-softmax",
        _softmax,
        WORDS,
        # Every softmax torch has, whichever way it is called.
        Rules(torch_functions=frozenset(SOFTMAXES)),
        reference="lib_softmax",
    ),
    Exercise("exercise-softmax-bug", _softmax, WORDS, reference="lib_softmax"),
    Exercise(
        "exercise-context-vectors",
        _context,
        WORDS,
        Rules(functions={"context_vectors": context_vectors}),
        reference="lib_context",
    ),
    Exercise("exercise-context-bug", _context, WORDS, reference="lib_context"),
]
