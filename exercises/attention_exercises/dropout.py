"""The exercises of the dropout chapter."""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.causal import CausalAttention
from attention_lib.masks import causal_mask, masked_softmax

from ._core import (
    CAUSAL_ATTENTION,
    COUNT,
    Exercise,
    Later,
    Ways,
    WrongAnswerError,
    backward,
    call,
    copy_weights,
    each_seed,
    expect,
    gradients_flow,
    hinted,
    later_calls,
    module_from,
    seed_weights,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

#: Dropout rates to try; 0.5 is left out, where 1/p and 1/(1 - p) agree.
RATES = (0.1, 0.2, 0.25, 0.3, 0.4, 0.6, 0.75)


WORDS: Messages = messages("dropout")


def _weights(seed: int, g: torch.Generator) -> torch.Tensor:
    # Causal attention weights, with and without a batch dimension: masked
    # zeros, rows that sum to 1.
    n = 2 + seed % 5
    lead = [(), (3,)][seed % 2]
    scores = torch.randn(*lead, n, n, generator=g)
    return masked_softmax(scores, causal_mask(n))


def one_head_mistakes(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    sizes: tuple[int, ...] = (),
) -> Ways:
    """The mistakes of the catalogue that causal attention with one head can
    make, computed from its right queries, keys and values, (b, t, d): what
    the reader's code returns, or the error it raises, written as the pages
    write it. ``sizes``: what else than the number of tokens the scores may
    be scaled by the root of (d_in, context_length)."""
    t, d = keys.shape[-2], keys.shape[-1]
    root = math.sqrt(d)
    dots = queries @ keys.transpose(-2, -1)  # (b, t, t), not scaled
    ones = torch.ones(t, t, dtype=torch.bool)
    future = ones.triu(1)  # True = masked out

    def weighted(
        hidden: torch.Tensor, scale: float = root, dim: int = -1
    ) -> torch.Tensor:
        return masked_softmax(dots / scale, hidden, dim) @ values

    def filled(
        hidden: torch.Tensor, fill: float = -torch.inf, dim: int = -1
    ) -> torch.Tensor:
        scores = (dots / root).masked_fill(hidden, fill)
        return torch.softmax(scores, dim=dim) @ values

    def sdpa(visible: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=visible
        )

    def swapped(keys_t: torch.Tensor) -> torch.Tensor:
        # The keys transposed counted from the front, in the page's order:
        # the product, the mask, the scaling inside the softmax.
        scores = (queries @ keys_t).masked_fill(future, -torch.inf)
        return torch.softmax(scores / root, dim=-1) @ values

    # A size of 1 scales nothing: scale_missing comes first.
    return {
        "scale_missing": [lambda: weighted(future, 1.0)],
        "scale_by_d_k": [lambda: weighted(future, d)],
        "scale_wrong_size": [
            functools.partial(weighted, future, math.sqrt(size))
            for size in (t, *sizes)
        ],
        "softmax_dim": [
            *(functools.partial(weighted, future, root, i) for i in (-2, 0)),
            *(
                functools.partial(filled, future, -torch.inf, i)
                for i in (-2, 0)
            ),
        ],
        # True read as "may attend" (`tril`, given to masked_fill), or the
        # mask transposed, hiding the past; or True = masked given to SDPA.
        "mask_polarity": [
            lambda: weighted(~future),
            lambda: filled(~future),
            lambda: weighted(future.T),
            lambda: filled(future.T),
            lambda: sdpa(future),
        ],
        # `triu` with diagonal=0 (a token hidden from itself) or 2 (the next
        # token seen), or SDPA's `tril` one diagonal off.
        "causal_diagonal": [
            lambda: weighted(ones.triu(0)),
            lambda: weighted(ones.triu(2)),
            lambda: filled(ones.triu(0)),
            lambda: filled(ones.triu(2)),
            lambda: sdpa(ones.tril(-1)),
            lambda: sdpa(ones.tril(1)),
        ],
        # A fill of 0, or the weights of every key zeroed after the softmax.
        "mask_fill_zero": [
            lambda: filled(future, 0.0),
            lambda: (
                torch.softmax(dots / root, -1).masked_fill(future, 0) @ values
            ),
        ],
        "dot_T": [
            lambda: swapped(keys.T),
            lambda: swapped(keys.transpose(0, 1)),
        ],
    }


def _inverted(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int, p: float) -> None:
        g = torch.Generator().manual_seed(seed)
        weights = _weights(seed, g)
        # The elements F.dropout keeps with this seed, and what it returns.
        seed_weights(seed)
        keep = F.dropout(torch.ones_like(weights), p) != 0
        seed_weights(seed)
        expected = F.dropout(weights, p)
        kept = weights * keep
        sums = kept.sum(dim=-1, keepdim=True)
        ways: Ways = {
            "by_p": [lambda: kept / p],
            "no_scale": [lambda: kept],
            "times_keep": [lambda: kept * (1 - p)],
            # `keep` read as a mask, True = dropped: the survivors zeroed,
            # the others scaled as dropout would, or not at all.
            "mask_polarity": [
                lambda: weights * ~keep / (1 - p),
                lambda: weights * ~keep / p,
                lambda: weights * ~keep,
            ],
            # 1 / (1 - p) at p = 1: 0 / 0 wherever nothing survives (before
            # renormalizing, which gives nan there too).
            "p_one": [lambda: kept / torch.tensor(1 - p)],
            "renormalize": [lambda: kept / sums],
        }
        given = weights.clone().requires_grad_()  # as in training
        out = call(answer, given, keep.clone(), p, wrong=variants(ways))
        expect(out, expected, "dropped", variants(ways))
        # Dropout sits in the middle of a model: the gradient flows back
        # through the survivors, scaled, and is 0 (not nan) for the others.
        gradients_flow(
            out,
            {"attn_weights": given},
            "dropped",
            lambda it: (
                it["attn_weights"] * keep / (1 - p)
                if p < 1
                else it["attn_weights"] * 0.0
            ),
        )

    each_seed(lambda seed: once(seed, RATES[seed % len(RATES)]))
    # Nothing dropped, then everything, as nn.Dropout(0.0) and (1.0) do, on
    # 2 x 2 weights (seeds 20 and 30), the smallest input a learner reads.
    once(COUNT, 0.0)
    # Whatever fails at p = 1 (nan values or gradients, detached zeros) is
    # the one case that 1 / (1 - p) does not cover.
    with hinted("p_one"):
        once(COUNT + 10, 1.0)
    return [("same_as_dropout", {"count": COUNT}), ("edges", {})]


def _eval_bug(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Later:
        d_in, d_out, n = 2 + seed % 3, 1 + seed % 4, 3 + seed % 4
        # Fewer tokens than context_length on two seeds in three, so that
        # a mask left at its full size shows.
        num_tokens = n - seed % 3
        p = RATES[seed % len(RATES)]
        seed_weights(seed)
        module = module_from(answer, d_in, d_out, n, p)
        reference = CausalAttention(d_in, d_out, n, p)
        names = ("W_query", "W_key", "W_value")
        copy_weights(module, reference, names, d_in, d_out)
        g = torch.Generator().manual_seed(seed)
        x = torch.rand(2, num_tokens, d_in, generator=g)
        scores = torch.zeros(2, num_tokens, num_tokens)
        # The full (n, n) mask on the scores of fewer tokens, given to
        # masked_softmax or to masked_fill: the errors they raise.
        unsliced: Ways = {
            "unsliced": [
                lambda: masked_softmax(scores, causal_mask(n)),
                lambda: scores.masked_fill(causal_mask(n), -torch.inf),
            ],
        }

        def run(model: Any, mode: bool, ways: Ways = unsliced) -> Any:
            # The same seed before each call: the same elements dropped.
            model.train(mode)
            seed_weights(seed)
            with torch.no_grad():
                return call(model, x, wrong=variants(ways))

        right_eval, right_train = run(reference, False), run(reference, True)
        reference.dropout.p = 1 - p
        keep_prob = run(reference, True)
        with torch.no_grad():
            q = reference.W_query(x)
            k = reference.W_key(x)
            v = reference.W_value(x)
            # nn.Dropout's draw, on the weights and on the scores before
            # the softmax (of the same shape): what training mode gives
            # with the rows renormalized, or with dropout put on the scores.
            attn_scores = q @ k.transpose(1, 2) / k.shape[-1] ** 0.5
            future = causal_mask(num_tokens)
            drawn = {}
            for name, before in (
                ("weights", masked_softmax(attn_scores, future)),
                ("scores", attn_scores),
                ("filled", attn_scores.masked_fill(future, -torch.inf)),
            ):
                seed_weights(seed)
                drawn[name] = F.dropout(before, p)
            renormalized = drawn["weights"] / drawn["weights"].sum(
                dim=-1, keepdim=True
            )
        mistakes: Ways = {
            "dropout_in_eval": [lambda: right_train],
            "eval_scale": [lambda: right_eval * (1 - p)],
            **one_head_mistakes(q, k, v, sizes=(d_in, n)),
        }
        out = run(module, False, {**unsliced, **mistakes})
        expect(out, right_eval, "eval_output", variants(mistakes))
        wrong: Ways = {
            "never_train": [lambda: right_eval],
            "keep_prob": [lambda: keep_prob],
            "by_p": [lambda: right_train * (1 - p) / p],
            "no_scale": [lambda: right_train * (1 - p)],
            # A row whose every weight was dropped: 0 / 0, or 0 where the
            # sums are kept from 0.
            "renormalize": [
                lambda: renormalized @ v,
                lambda: renormalized.nan_to_num(0.0) @ v,
            ],
            "scores_dropped": [
                lambda: masked_softmax(drawn["scores"], future) @ v,
                lambda: torch.softmax(drawn["filled"], dim=-1) @ v,
            ],
        }
        try:
            train = run(module, True)
            expect(train, right_train, "train_output", variants(wrong))
        except WrongAnswerError as failure:
            if failure.hint != "compare":
                # Compared with training mode, not with the exercise's
                # evaluation mode.
                failure.fields["reference"] = "lib_train"
                raise
            # Another draw than nn.Dropout's, as a hand-written dropout
            # makes: judged by what dropout is.
            _dropout_by_its_properties(answer, p, seed)
        # Training needs the gradients to reach every weight.
        module.train(False)
        reference.dropout.p = p
        reference.train(False)
        backward(call(module, x), module, "eval_output")
        later = [
            2 * torch.rand(size, tokens, d_in, generator=g) - 1
            for size, tokens in ((3, min(num_tokens + 1, n)), (1, 1), (2, n))
        ]
        # Called again after every seed's own checks, whose hints are
        # more precise.
        return module, reference, later, "eval_output"

    for later in each_seed(once):
        later_calls(*later)
    return [
        ("same_as_eval", {"count": COUNT}),
        ("dropout_properties", {}),
        ("grad", {}),
        ("calls", {}),
    ]


def _rows_still_sum_to_one(
    out: torch.Tensor, weights: torch.Tensor, dropped: torch.Tensor, p: float
) -> None:
    """Dropout leaves rows that no longer sum to 1. Rows that still do,
    once weights changed, were normalized after it: by dividing by their
    sums (weights ``dropped`` to 0), or by a softmax after dropout on the
    scores (none at 0: a dropped score of 0 still gets a weight)."""
    totals = out.sum(dim=-1)
    rows = totals.isfinite() & (totals.abs() > 1e-6)  # not 0 / 0, not 0
    if torch.allclose(out, weights) or not rows.any():
        return  # nothing dropped in this draw
    if not torch.allclose(totals[rows], torch.ones_like(totals[rows])):
        return
    if dropped.any():
        raise WrongAnswerError("dropout_scale", "renormalize", p=p)
    raise WrongAnswerError("dropout_softmax", "scores_dropped", p=p)


def _dropout_by_its_properties(answer: Any, p: float, seed: int) -> None:
    """Training mode judged by properties, not by one random stream. With
    one-hot inputs and an identity value projection, the values are the
    identity and the output is the dropped attention weights themselves:
    each is 0 or its weight scaled by 1/(1 - p), and the share kept is
    within a binomial bound of 1 - p."""
    n, b, trials = 6, 4, 8
    module = module_from(answer, n, n, n, p)
    reference = CausalAttention(n, n, n, p)
    with torch.no_grad():
        reference.W_value.weight.copy_(torch.eye(n))
    copy_weights(module, reference, ("W_query", "W_key", "W_value"), n, n)
    x = torch.eye(n).expand(b, n, n)  # (b, n, n): token i is the one-hot e_i
    with torch.no_grad():
        reference.eval()
        weights = reference(x)  # (b, n, n): the attention weights
        module.eval()
        expect(call(module, x), weights, "eval_output")
        module.train()
        drawn = []
        for trial in range(trials):
            seed_weights(1000 * seed + trial)
            drawn.append(call(module, x))
    try:
        _dropped_as_dropout_drops(drawn, weights, p)
    except WrongAnswerError as failure:
        # Compared with what dropout makes of the weights, in training mode.
        failure.fields.setdefault("reference", "lib_dropped")
        raise


def _dropped_as_dropout_drops(
    drawn: list[Any], weights: torch.Tensor, p: float
) -> None:
    """Each of the outputs ``drawn`` in training mode, from one-hot inputs
    whose outputs are the attention weights, must be what dropout makes of
    ``weights``: each 0 or scaled by 1/(1 - p), drawn one by one, about
    1 - p of them kept."""
    trials = len(drawn)
    shown = weights > 1e-6  # the weights that dropout may drop
    kept_count = 0
    rows_mixed = cols_mixed = False
    for out in drawn:
        if not isinstance(out, torch.Tensor) or out.shape != weights.shape:
            expect(out, weights, "train_output")
        survived = (out.abs() > 1e-6) & shown  # (b, n, n)
        _rows_still_sum_to_one(out, weights, survived != shown, p)
        scaled = out[survived] / weights[survived]
        if not torch.allclose(scaled, torch.full_like(scaled, 1 / (1 - p))):
            by_p = torch.allclose(scaled, torch.full_like(scaled, 1 / p))
            never = torch.allclose(scaled, torch.ones_like(scaled))
            hint = "by_p" if by_p else "no_scale" if never else "compare"
            raise WrongAnswerError("dropout_scale", hint, p=p)
        if (out[~shown].abs() > 1e-6).any():
            raise WrongAnswerError("future", "compare", i=0, j=1)
        kept_count += int(survived.sum())
        # A row, or a column, whose shown weights were not all dropped or
        # all kept together: drawn weight by weight.
        rows_mixed |= bool(
            (survived.any(-1) & (survived != shown).any(-1)).any()
        )
        cols_mixed |= bool(
            (survived.any(-2) & (survived != shown).any(-2)).any()
        )
    if not (rows_mixed and cols_mixed):
        # Whole keys (dropout on the values) or whole queries dropped.
        what = "queries" if cols_mixed else "keys"
        raise WrongAnswerError(
            "dropout_together", "dropout_weights", what=what
        )
    samples = trials * int(shown.sum())
    share = kept_count / samples
    bound = 5 * math.sqrt(p * (1 - p) / samples) + 1 / samples
    if share == 1.0:
        raise WrongAnswerError(
            "dropout_share", "never_train", share=share, p=p, keep=1 - p
        )
    if abs(share - (1 - p)) > bound:
        hint = "keep_prob" if abs(share - p) <= bound else "compare"
        raise WrongAnswerError(
            "dropout_share", hint, share=share, p=p, keep=1 - p
        )


EXERCISES = [
    Exercise(
        "exercise-inverted-dropout",
        _inverted,
        WORDS,
        # The draw is given: no draw of the answer's own, whichever way.
        Rules(
            torch_functions=frozenset(
                {"rand", "rand_like", "bernoulli", "dropout", "native_dropout"}
            )
        ),
        reference="lib_inverted",
        mistakes=frozenset({"mask_polarity"}),
    ),
    Exercise(
        "exercise-dropout-eval-bug",
        _eval_bug,
        WORDS,
        reference="lib_eval",
        mistakes=CAUSAL_ATTENTION | {"dropout_in_eval"},
    ),
]
