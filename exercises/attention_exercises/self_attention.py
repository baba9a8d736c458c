"""The exercises of the self-attention chapters: trainable weights and
masks."""

from __future__ import annotations

import math
from typing import Any

import torch
from attention_lib.masks import causal_mask, masked_softmax, padding_mask
from attention_lib.self_attention import SelfAttentionV1, SelfAttentionV2

from ._core import (
    MASKING,
    SCALING,
    Exercise,
    Later,
    Ways,
    WrongAnswerError,
    attend,
    backward,
    call,
    close,
    copy_weights,
    each_seed,
    expect,
    fill_zero_ways,
    hinted,
    later_calls,
    layers_match,
    linear_named,
    module_from,
    rows_sum_to_one,
    seed_weights,
    shares_memory,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("self_attention")


def _sizes(seed: int) -> tuple[int, int, int]:
    # d_in, d_out and the number of tokens all apart, so that scaling by
    # the root of d_in or of the number of tokens shows on every seed (and
    # d_in is never d_out ** 2: its root is never the d_out of scale_by_d_k).
    d_out = 2 + seed % 3
    d_in = d_out + 3 + seed % 2
    return d_in, d_out, d_in + 1 + seed % 3


#: The layers a module of the self-attention chapter has, by the page's names.
_NAMES = ("W_query", "W_key", "W_value")


def _self_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    names = _NAMES

    def once(seed: int) -> Later:
        d_in, d_out, n = _sizes(seed)
        seed_weights(seed)
        module = module_from(answer, d_in, d_out)
        reference = SelfAttentionV2(d_in, d_out)
        g = torch.Generator().manual_seed(seed)
        biases: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            for name in names:
                layer = linear_named(module, name, d_in, d_out, "linear")
                layer.weight.copy_(getattr(reference, name).weight)
                if layer.bias is not None:
                    # The library has none: a bias the reader added gets
                    # random values, as training would give it, so it shows.
                    layer.bias.copy_(torch.rand(d_out, generator=g) + 0.5)
                    biases[name] = layer.bias.detach().clone()
        x = torch.rand(n, d_in, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            q = reference.W_query(x)
            k = reference.W_key(x)
            v = reference.W_value(x)
            qb, kb, vb = (
                projected + biases.get(name, 0.0)
                for projected, name in zip((q, k, v), names, strict=True)
            )
        root = math.sqrt(d_out)
        wrong = {
            # Scaling twice by the root of d_k (queries scaled before
            # F.scaled_dot_product_attention) divides by d_k too.
            "scale_by_d_k": lambda: attend(q, k, v, d_out),
            # The root of d_in, or of the number of tokens.
            "scale_wrong_size": lambda: attend(q, k, v, math.sqrt(d_in)),
            "scale_wrong_size:tokens": lambda: attend(q, k, v, math.sqrt(n)),
            "scale_missing": lambda: attend(q, k, v, 1.0),
            "keys_from_query": lambda: attend(q, q, v, root),
            "query_key_swapped": lambda: attend(k, q, v, root),
            "keys_from_value": lambda: attend(q, v, v, root),
            "values_from_key": lambda: attend(q, k, k, root),
            "softmax_dim": lambda: attend(q, k, v, root, dim=0),
            **({"bias": lambda: attend(qb, kb, vb, root)} if biases else {}),
        }
        out = call(module, x, wrong=wrong)
        with torch.no_grad():
            expected = reference(x)
        expect(out, expected.detach(), "output", wrong)
        backward(out, module, "output")
        # The right gradients, not only some: the library's.
        reference(x).sum().backward()
        layers_match(module, reference, list(names))
        later = [
            2 * torch.rand(size, d_in, generator=g) - 1
            for size in (n + 1, max(1, n - 1), n)
        ]
        # Called again after every seed's own checks, whose hints are
        # more precise.
        return module, reference, later, "output"

    for later in each_seed(once):
        later_calls(*later, eval_too=True)
    shape = {"what": "output", "shape": "(n, d_out)"}
    checks = [("shape", shape), ("values", values_on("lib_v2"))]
    checks += [("grad_values", {}), ("calls", {})]
    return [*checks, ("eval", {})]


def _batched_self_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    """`_self_attention`, then batches: the write-it asks for both shapes."""
    checks = _self_attention(answer)

    def once(seed: int) -> None:
        d_in, d_out, n = _sizes(seed)
        seed_weights(seed)
        module = module_from(answer, d_in, d_out)
        reference = SelfAttentionV2(d_in, d_out)
        copy_weights(module, reference, _NAMES, d_in, d_out)
        g = torch.Generator().manual_seed(seed)
        x = torch.rand(2 + seed % 2, n, d_in, generator=g)
        with torch.no_grad():
            q, k, v = (getattr(reference, name)(x) for name in _NAMES)
        root = math.sqrt(d_out)

        def product(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
            return torch.softmax(scores / root, dim=dim) @ v

        # The one-sequence code on a batch: `.T` reverses every dimension,
        # a transpose counted from the front swaps the batch, and dim=1
        # is the queries' axis there.
        ways: Ways = {
            "dot_T": [
                lambda: product(q @ k.T),
                lambda: product(q @ k.transpose(0, 1)),
            ],
            "softmax_dim": [lambda: product(q @ k.mT, dim=1)],
        }
        with hinted("one_sequence", unless_named=True):
            out = call(module, x, wrong=variants(ways))
            expect(out, reference(x).detach(), "output", variants(ways))

    each_seed(once)
    shape = {"what": "output", "shape": "batched_shape"}
    return [("shape", shape), *checks[1:], ("batched", {})]


def _copy_v2_into_v1(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    names = ("W_query", "W_key", "W_value")

    def once(seed: int) -> None:
        d_in, d_out, n = 2 + seed % 3, 1 + seed % 4, 2 + seed % 5
        if d_in == d_out:
            d_out += 1  # a square weight would hide a missing transpose
        seed_weights(seed)
        sa_v1, sa_v2 = (
            SelfAttentionV1(d_in, d_out),
            SelfAttentionV2(d_in, d_out),
        )
        x = torch.rand(n, d_in, generator=torch.Generator().manual_seed(seed))

        def v1_output(v1: SelfAttentionV1) -> torch.Tensor:
            # The library's forward on sa_v1's parameters: a `forward`
            # the answer put on the instance does not count.
            with torch.no_grad():
                return SelfAttentionV1.forward(v1, x)

        def copied(pairs: dict[str, torch.Tensor]) -> torch.Tensor:
            v1 = SelfAttentionV1(d_in, d_out)
            with torch.no_grad():
                for name, value in pairs.items():
                    getattr(v1, name).copy_(value)
            return v1_output(v1)

        def plain(name: str) -> torch.Tensor:
            return getattr(sa_v2, name).weight.T

        def assigned() -> torch.Tensor:
            # Raises: a parameter cannot be replaced by a plain tensor.
            v1 = SelfAttentionV1(d_in, d_out)
            v1.W_query = plain("W_query")  # type: ignore[assignment]
            return v1_output(v1)

        def no_grad_copy() -> torch.Tensor:
            # Raises: autograd refuses an in-place copy into a leaf that
            # requires grad.
            return SelfAttentionV1(d_in, d_out).W_query.copy_(plain("W_query"))

        wrong = {
            "transpose": lambda: copied(
                {name: getattr(sa_v2, name).weight for name in names}
            ),
            "assign": assigned,
            "under_no_grad": no_grad_copy,
            "swapped": lambda: copied(
                {
                    "W_query": plain("W_key"),
                    "W_key": plain("W_query"),
                    "W_value": plain("W_value"),
                }
            ),
            "in_place": lambda: v1_output(sa_v1),
        }
        # What sa_v2 computes before the call: an answer that copies the
        # other way round, or changes both, must not pass.
        with torch.no_grad():
            expected = sa_v2(x)
        before = v1_output(sa_v1)
        try:
            call(answer, sa_v1, sa_v2, wrong=wrong, changes=(0,))
        except WrongAnswerError as failure:
            if failure.problem == "mutated":  # sa_v2, the one to keep
                failure.hint = "wrong_way"
            raise
        for name in names:
            weight = getattr(sa_v1, name, None)
            # d_in != d_out: nn.Linear's layout, not transposed.
            if isinstance(weight, torch.Tensor) and weight.shape == (
                d_out,
                d_in,
            ):
                raise WrongAnswerError(
                    "shape",
                    "transpose",
                    what="v1_weights",
                    got=tuple(weight.shape),
                    expected=(d_in, d_out),
                )
        try:
            out = v1_output(sa_v1)
        except Exception as error:  # the reader's parameters, reported
            said = f"{type(error).__name__}: {error}"
            raise WrongAnswerError("raised", "compare", error=said) from None
        wrong["in_place"] = lambda: before
        expect(out, expected, "v1_output", wrong)
        # A copy trains: through the class's own forward, every parameter
        # of sa_v1 gets its gradient.
        backward(SelfAttentionV1.forward(sa_v1, x), sa_v1, "v1_output")
        if shares_memory(sa_v1, sa_v2):
            shared.append(seed)

    shared: list[int] = []
    each_seed(once)
    values = values_on("lib_v2_copied")
    checked = [("values", values), ("grad", {})]
    if shared:  # right, and yet not a copy
        checked.append(("shares", {"target": "sa_v1", "source": "sa_v2"}))
    return checked


def _causal_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # 3 tokens first: with 2, hiding from diagonal=2 hides nothing.
        n = 2 + (seed + 1) % 6
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(n, n, generator=g)
        future = causal_mask(n)
        ones = torch.ones(n, n)
        inf = -torch.inf
        weights = torch.softmax(scores, dim=-1)

        def hiding(mask: torch.Tensor) -> torch.Tensor:
            return torch.softmax(scores.masked_fill(mask, inf), dim=-1)

        wrong = {
            # The past hidden, or the keys a query may see (`tril`).
            "mask_polarity:past": lambda: hiding(torch.tril(ones, -1).bool()),
            "causal_diagonal": lambda: hiding(torch.triu(ones).bool()),
            "mask_polarity": lambda: hiding(torch.tril(ones).bool()),
            "causal_diagonal:next": lambda: hiding(torch.triu(ones, 2).bool()),
            "no_mask": lambda: weights,
            "mul_inf": lambda: torch.softmax(
                scores + torch.triu(ones, 1) * inf, dim=-1
            ),
            "float_mask": lambda: scores.masked_fill(torch.triu(ones, 1), inf),
            # A fill of 0, or the weights zeroed after the softmax.
            **variants({"mask_fill_zero": fill_zero_ways(scores, future)}),
            "softmax_dim": lambda: torch.softmax(
                scores.masked_fill(future, inf), dim=0
            ),
            # The scores given are scaled already.
            "scale_extra": lambda: torch.softmax(
                scores.masked_fill(future, inf) / n**0.5, dim=-1
            ),
        }
        out = call(answer, scores.clone(), wrong=wrong)
        expected = masked_softmax(scores, future)
        expect(out, expected, "weights", wrong)
        rows_sum_to_one(out, "mask_fill_zero")
        # The later keys' scores, far above the others: no earlier row
        # may change.
        lead = 200 + 100 * torch.rand(n, n, generator=g)
        raised = torch.where(future, lead, scores)
        kept = torch.softmax(raised, dim=-1).masked_fill(future, 0.0)
        late = {"way1": lambda: kept / kept.sum(dim=-1, keepdim=True)}
        out = call(answer, raised.clone(), wrong=late)
        try:
            expect(out, expected, "weights", late)
        except WrongAnswerError as failure:
            changed = [
                i for i in range(n - 1) if not close(out[i], expected[i])
            ]
            if failure.problem not in ("values", "not_finite") or not changed:
                raise
            i = changed[0]
            raise WrongAnswerError(
                "future", failure.hint, i=i, j=i + 1
            ) from None
        _low_scores(answer, scores, future)

    each_seed(once)
    values = values_on("lib_causal")
    return [("values", values), ("rows", {}), ("future", {})]


def _low_scores(
    answer: Any, scores: torch.Tensor, hidden: torch.Tensor, *args: Any
) -> None:
    """The scores far below 0 (the right weights stay the same): a fill of
    the hidden keys' scores with 0 or another fixed number (-20, -100) is
    above them now, and takes every weight. `-torch.inf`, or the dtype's
    most negative number, hides a key whatever the real scores."""
    low = scores - 1000
    wrong = {
        "mask_fill_zero": lambda: torch.softmax(
            low.masked_fill(hidden, 0.0), dim=-1
        )
    }
    out = call(answer, low.clone(), *args, wrong=wrong)
    expect(out, masked_softmax(low, hidden), "weights", wrong)


def _combined_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # First two real tokens and three padding keys: there `&`, and
        # padding from valid_len + 1, give weights of their own (with 2
        # tokens and 1 real one they are the same). Later seeds have one
        # real token, or no padding at all.
        n = 2 + (seed + 3) % 6
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(n, n, generator=g)
        valid_len = 1 + (seed + 1) % n
        causal = causal_mask(n)
        padding = padding_mask(torch.tensor([valid_len]), n)[0]  # (1, n)
        late = torch.arange(n) > valid_len  # padding from valid_len + 1
        hidden = causal | padding
        ones = torch.ones(n, n)

        def hiding(mask: torch.Tensor, by: float = 1.0) -> torch.Tensor:
            return torch.softmax(scores.masked_fill(mask, -torch.inf) / by, -1)

        wrong = {
            "and": lambda: masked_softmax(scores, causal & padding),
            "padding_from": lambda: hiding(causal | late),
            # The keys a query may use hidden: both masks the wrong way
            # round (`tril`, `< valid_len`), or one of them.
            "mask_polarity": lambda: hiding(~hidden),
            "mask_polarity:causal": lambda: hiding(
                torch.tril(ones).bool() | padding
            ),
            "mask_polarity:padding": lambda: hiding(causal | ~padding),
            "causal_diagonal": lambda: hiding(
                torch.triu(ones).bool() | padding
            ),
            "causal_diagonal:next": lambda: hiding(
                torch.triu(ones, 2).bool() | padding
            ),
            # A fill of 0, or the weights zeroed after the softmax.
            **variants({"mask_fill_zero": fill_zero_ways(scores, hidden)}),
            "softmax_dim": lambda: torch.softmax(
                scores.masked_fill(hidden, -torch.inf), dim=0
            ),
            # The scores given are scaled already.
            "scale_extra": lambda: hiding(hidden, n**0.5),
        }
        out = call(answer, scores.clone(), valid_len, wrong=wrong)
        expected = masked_softmax(scores, hidden)
        expect(out, expected, "weights", wrong)
        # The hidden keys' scores far above the others: the weights stay the
        # same, unless the hidden scores take part in a softmax.
        lead = 200 + 100 * torch.rand(n, n, generator=g)
        out = call(answer, torch.where(hidden, lead, scores), valid_len)
        with hinted("renormalize"):
            expect(out, expected, "weights")
        _low_scores(answer, scores, hidden, valid_len)

    each_seed(once)
    values = values_on("lib_combined")
    return [("values", values)]


#: The mistakes of the catalogue scaled attention can make. Scaling twice
#: by the root of d_k divides by d_k: `scale_by_d_k`.
SCALED_MISTAKES = SCALING | {"softmax_dim"}

#: Those a causal mask on given scores (scaled already) can make.
MASK_MISTAKES = MASKING | {"scale_extra", "softmax_dim"}

EXERCISES = [
    Exercise(
        "exercise-self-attention",
        _batched_self_attention,
        WORDS,
        reference="lib_v2",
        mistakes=SCALED_MISTAKES | {"dot_T"},
    ),
    Exercise(
        "exercise-copy-v2-into-v1",
        _copy_v2_into_v1,
        WORDS,
        reference="lib_v2_copied",
    ),
    Exercise(
        "exercise-keys-bug",
        _self_attention,
        WORDS,
        reference="lib_v2",
        mistakes=SCALED_MISTAKES,
    ),
    Exercise(
        "exercise-causal-weights",
        _causal_weights,
        WORDS,
        # The task: torch.triu, masked_fill and torch.softmax.
        Rules(
            functions={
                "masked_softmax": masked_softmax,
                "causal_mask": causal_mask,
            }
        ),
        reference="lib_causal",
        mistakes=MASK_MISTAKES,
    ),
    Exercise(
        "exercise-combined-mask-bug",
        _combined_weights,
        WORDS,
        reference="lib_combined",
        mistakes=MASK_MISTAKES,
    ),
]
