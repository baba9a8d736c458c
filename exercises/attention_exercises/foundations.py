"""The exercises of the first chapters: attention scores, attention weights
and context vectors, without trainable weights."""

from __future__ import annotations

from typing import Any

import torch
from attention_lib.scoring import dot_product_scores
from attention_lib.weight_free import (
    context_vectors,
)
from torch.overrides import TorchFunctionMode

from ._core import (
    Exercise,
    Ways,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    hinted,
    rows_sum_to_one,
    values_on,
    variants,
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


def _queries_and_keys(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    # Two seeds in a row share their sizes, with other values. Fewer or
    # more queries than keys, where a table the wrong way round has the
    # wrong shape, and once as many, (6, 6), where it has the right one;
    # one query only from the third size on, where `*` broadcasts.
    k = seed // 2
    num_queries = 1 + (k + 1) % 6
    num_keys, d = 2 + (7 * k // 3 + 1) % 6, 1 + (k + 3) % 5
    queries = torch.randn(num_queries, d, generator=g)
    return queries, torch.randn(num_keys, d, generator=g)


def _all_scores(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        queries, keys = _queries_and_keys(seed)
        wrong = {
            "keys_first": lambda: keys @ queries.T,
            "no_transpose": lambda: queries @ keys,
            "dims_product": lambda: queries.T @ keys,
            # The page's `(x_journey * x_your).sum()` on whole matrices:
            # query i with key i only.
            "elementwise": lambda: queries * keys,
            "elementwise:sum": lambda: (queries * keys).sum(-1),
            "elementwise:keepdim": lambda: (queries * keys).sum(
                -1, keepdim=True
            ),
            # The page's `inputs @ inputs.T`, with one of the two names.
            "self_scores": lambda: queries @ queries.T,
            "self_scores:keys": lambda: keys @ keys.T,
            # The scaling of later chapters, a step too early here: by the
            # root of d, or by d itself.
            "scale_extra": lambda: queries @ keys.T / keys.shape[-1] ** 0.5,
            "scale_extra:by_d": lambda: queries @ keys.T / keys.shape[-1],
            # The softmax of the next chapter, a step too far: the weights.
            "weights_not_scores": lambda: torch.softmax(
                queries @ keys.T, dim=-1
            ),
            "weights_not_scores:dim0": lambda: torch.softmax(
                queries @ keys.T, dim=0
            ),
        }
        out = call(answer, queries, keys, wrong=wrong)
        expect(out, dot_product_scores(queries, keys), "scores", wrong)

    each_seed(once)
    shape = {"what": "scores", "shape": "(num_queries, num_keys)"}
    return [("shape", shape), ("values", values_on("lib_scores"))]


def _batched_scores(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        x = _inputs(seed, batch=2 + (seed // 2) % 3)
        # `.T` reverses every dimension, `transpose(0, 1)` swaps the batch
        # with the tokens: each raises, or gives other scores.
        wrong = {
            "dot_T": lambda: x @ x.T,
            "dot_T:front": lambda: x @ x.transpose(0, 1),
            "dot_T:bmm": lambda: torch.bmm(x, x.T),
            "dot_T:bmm_front": lambda: torch.bmm(x, x.transpose(0, 1)),
            "scale_extra": lambda: (
                x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5
            ),
        }
        out = call(answer, x, wrong=wrong)
        expect(out, x @ x.transpose(-2, -1), "scores", wrong)

    each_seed(once)
    shape = {"what": "scores", "shape": "(b, n, n)"}
    return [("shape", shape), ("values", values_on("lib_batched"))]


def _softmax(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def wrong(x: torch.Tensor) -> dict[str, Any]:
        row_max = x.max(dim=-1).values
        # With a dim, max returns the maxima and their indices.
        pair: Any = x.max(dim=-1, keepdim=True)
        e = (x - x.max(dim=-1, keepdim=True).values).exp()
        return {
            # `.values` left out: a tensor minus max's pair raises.
            "no_values": lambda: x - pair,
            "naive": lambda: x.exp() / x.exp().sum(dim=-1, keepdim=True),
            "global_max": lambda: _normalize((x - x.max()).exp()),
            "no_keepdim": lambda: _normalize((x - row_max).exp()),
            "sum_no_keepdim": lambda: e / e.sum(dim=-1),
            "by_sum": lambda: x / x.sum(dim=-1, keepdim=True),
            # A step over dim=0: the sum, or the max (whose rows sum to 1,
            # and are not the softmax: each score loses its column's max).
            "softmax_dim": lambda: torch.softmax(x, dim=0),
            "softmax_dim:sum": lambda: e / e.sum(dim=0, keepdim=True),
            "softmax_dim:max": lambda: _normalize(
                (x - x.max(dim=0, keepdim=True).values).exp()
            ),
            "scale_extra": lambda: torch.softmax(
                x / x.shape[-1] ** 0.5, dim=-1
            ),
        }

    def once(x: torch.Tensor, large: bool = False) -> None:
        mistakes = wrong(x)
        if large:  # right on every random input: no step over dim=0
            mistakes = {
                key: make
                for key, make in mistakes.items()
                if not key.startswith("softmax_dim")
            }
        out = call(answer, x, wrong=mistakes)
        expect(out, torch.softmax(x, dim=-1), "weights", mistakes)
        rows_sum_to_one(out, "softmax_dim")

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
            once(big, large=True)
        except WrongAnswerError as failure:
            # Right on every random input, wrong on large ones (nan, inf, or
            # scores far apart made equal): not the row's largest score
            # subtracted.
            if failure.problem in ("not_finite", "values") and (
                failure.hint == "compare"
            ):
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
            "softmax_dim": lambda: weights.T @ x,
            "no_softmax": lambda: scores @ x,
            "inputs_last": lambda: x.T @ weights,
            # The scaling of later chapters, a step too early here: by the
            # root of d_in, or by d_in itself.
            "scale_extra": lambda: (
                torch.softmax(scores / x.shape[-1] ** 0.5, dim=-1) @ x
            ),
            "scale_extra:by_d": lambda: (
                torch.softmax(scores / x.shape[-1], dim=-1) @ x
            ),
        }
        softmaxes = _SoftmaxDims()
        with softmaxes:
            out = call(answer, x, wrong=wrong)
        dims = softmaxes.dims
        try:
            expect(out, weights @ x, "context", wrong)
        except WrongAnswerError as failure:
            # The same numbers as a softmax over dim=0: a softmax over the
            # rows whose weights were transposed after it.
            if (
                failure.hint == "softmax_dim"
                and dims
                and all(dim in (-1, 1) for dim in dims)
            ):
                failure.hint = "weights_T"
            raise

    each_seed(once)
    shape = {"what": "context", "shape": "(n, d_in)"}
    return [("shape", shape), ("values", values_on("lib_context"))]


class _SoftmaxDims(TorchFunctionMode):
    """The ``dim`` of each softmax the code inside calls, in ``dims`` (on
    2-D scores, ``-1`` and ``1`` are the rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.dims: list[object] = []

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in SOFTMAXES:
            given = args[1] if len(args) > 1 else None
            self.dims.append(kwargs.get("dim", given))
        return func(*args, **kwargs)


def _batched_context(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    """`_context`, then batches: the write-it asks for both shapes."""
    checks = _context(answer)

    def once(seed: int) -> None:
        x = _inputs(seed, batch=2 + (seed // 2) % 3) + seed % 3
        weights = torch.softmax(x @ x.transpose(-2, -1), dim=-1)
        # The transposes of one sequence, on a batch: `.T` reverses every
        # dimension, and one counted from the front swaps the batch.
        ways: Ways = {
            "dot_T": [
                lambda: torch.softmax(x @ x.T, dim=-1) @ x,
                lambda: torch.softmax(x @ x.transpose(0, 1), dim=-1) @ x,
            ],
            "softmax_dim": [lambda: torch.softmax(x @ x.mT, dim=1) @ x],
        }
        with hinted("one_sequence", unless_named=True):
            out = call(answer, x, wrong=variants(ways))
            expect(out, weights @ x, "context", variants(ways))

    each_seed(once)
    shape = {"what": "context", "shape": "batched_shape"}
    return [("shape", shape), *checks[1:], ("batched", {})]


#: The mistakes of the catalogue a softmax of unscaled scores can make: a
#: step over the wrong dimension, a scaling that comes in a later chapter.
SOFTMAX_MISTAKES = frozenset({"softmax_dim", "scale_extra"})

EXERCISES = [
    Exercise(
        "exercise-all-scores",
        _all_scores,
        WORDS,
        Rules(
            no_loop=True,
            functions={"dot_product_scores": dot_product_scores},
        ),
        reference="lib_scores",
        mistakes=frozenset({"scale_extra"}),
    ),
    Exercise(
        "exercise-batched-scores",
        _batched_scores,
        WORDS,
        reference="lib_batched",
        mistakes=frozenset({"dot_T", "scale_extra"}),
    ),
    Exercise(
        "exercise-stable-softmax",
        _softmax,
        WORDS,
        # Every softmax torch has, whichever way it is called.
        Rules(torch_functions=frozenset(SOFTMAXES)),
        reference="lib_softmax",
        mistakes=SOFTMAX_MISTAKES,
    ),
    Exercise(
        "exercise-softmax-bug",
        _softmax,
        WORDS,
        reference="lib_softmax",
        mistakes=SOFTMAX_MISTAKES,
    ),
    Exercise(
        "exercise-context-vectors",
        _batched_context,
        WORDS,
        Rules(functions={"context_vectors": context_vectors}),
        reference="lib_context",
        mistakes=SOFTMAX_MISTAKES | {"dot_T"},
    ),
    Exercise(
        "exercise-context-bug",
        _context,
        WORDS,
        reference="lib_context",
        mistakes=SOFTMAX_MISTAKES,
    ),
]
