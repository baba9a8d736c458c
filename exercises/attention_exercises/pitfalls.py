"""The exercises of the pitfalls chapter: one bug for each pitfall it lists,
in another place than the page shows it. The view-without-transpose, square
and head_dim bugs are judged by the multi-head chapter's checks."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import torch
from attention_lib.heads import split_heads, transpose_qkv
from attention_lib.masks import causal_mask, masked_softmax
from attention_lib.multihead import MultiHeadAttention
from attention_lib.self_attention import SelfAttentionV2
from torch import nn

from . import multihead
from ._core import (
    MASKING,
    SCALING,
    Exercise,
    Flow,
    Later,
    WrongAnswerError,
    attend,
    backward,
    call,
    each_seed,
    expect,
    fill_zero_ways,
    grad_matches,
    gradients_flow,
    hinted,
    later_calls,
    linear_named,
    module_from,
    seed_weights,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules
from .multihead import MULTI_HEAD_MISTAKES, SPLIT_MISTAKES

WORDS: Messages = messages("pitfalls")


def _fused(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Later:
        # d_out never 1: with one feature, the scale by 3 * d_out and a
        # mixed-up order show less. The first seed's d_out is not 3, where
        # sqrt(3 * d_out) is d_out, the scale by d_k itself.
        d_in, d_out = 2 + seed % 3, 2 + (seed + 2) % 3
        seed_weights(seed)
        module = module_from(answer, d_in, d_out)
        reference = SelfAttentionV2(d_in, d_out)
        layer = linear_named(module, "W_qkv", d_in, 3 * d_out)
        with torch.no_grad():
            layer.weight.copy_(
                torch.cat(
                    [
                        reference.W_query.weight,
                        reference.W_key.weight,
                        reference.W_value.weight,
                    ]
                )
            )
            if layer.bias is not None:
                # A bias the task's layer does not have, set as training
                # would set it: the outputs show it.
                layer.bias.uniform_(-1.0, 1.0)
        g = torch.Generator().manual_seed(seed)
        # One sequence, or a batch of them; scores large enough that a
        # wrong scale shows.
        shape = (5 + seed % 3, d_in) if seed % 2 else (2, 4 + seed % 3, d_in)
        x = 2 * torch.randn(shape, generator=g)
        with torch.no_grad():
            qkv = {
                "q": reference.W_query(x),
                "k": reference.W_key(x),
                "v": reference.W_value(x),
            }
        q, k, v = qkv["q"], qkv["k"], qkv["v"]
        root, t = d_out**0.5, x.shape[-2]
        orders: dict[str, Callable[[], torch.Tensor]] = {
            "".join(order): functools.partial(
                attend, qkv[order[0]], qkv[order[1]], qkv[order[2]], d_out**0.5
            )
            for order in itertools.product("qkv", repeat=3)
            if order != ("q", "k", "v")
        }
        wrong: dict[str, Callable[[], torch.Tensor]] = {
            **orders,
            # Before scale_fused and scale_by_d_k: where a wrong size's root
            # is one of theirs, the size is the mistake (theirs fail first
            # on the first seed, where no two roots are equal).
            "scale_wrong_size": lambda: attend(q, k, v, d_in**0.5),
            "scale_wrong_size:tokens": lambda: attend(q, k, v, t**0.5),
            "scale_fused": lambda: attend(q, k, v, (3 * d_out) ** 0.5),
            # scaled twice (queries divided by sqrt(d_out), then SDPA) too
            "scale_by_d_k": lambda: attend(q, k, v, float(d_out)),
            "scale_missing": lambda: attend(q, k, v, 1.0),
            # over the queries (dim=1 of a batch), or the batch
            "softmax_dim": lambda: attend(q, k, v, root, dim=-2),
            "softmax_dim:0": lambda: attend(q, k, v, root, dim=0),
            # right for one sequence only
            "dot_T": lambda: torch.softmax(q @ k.T / root, dim=-1) @ v,
            "dot_T:0": lambda: (
                torch.softmax(q @ k.transpose(0, 1) / root, dim=-1) @ v
            ),
            "dot_T:1": lambda: (
                torch.softmax(q @ k.transpose(1, 2) / root, dim=-1) @ v
            ),
        }
        out = call(module, x, wrong=wrong)
        try:
            expect(out, reference(x).detach(), "output", wrong)
        except WrongAnswerError as failure:
            # One mistake, whichever of the 26 wrong orders it is.
            if failure.hint in orders:
                failure.hint = "qkv_order"
            elif failure.hint == "compare" and layer.bias is not None:
                failure.hint = "bias"
            elif failure.hint is not None:
                failure.hint = failure.hint.partition(":")[0]
            raise
        backward(out, module, "output")
        # The right gradients, not only some: W_qkv's three blocks get the
        # library's three layers' gradients.
        reference(x).sum().backward()
        right = torch.cat(
            [
                lib_layer.weight.grad
                for lib_layer in (
                    reference.W_query,
                    reference.W_key,
                    reference.W_value,
                )
                if lib_layer.weight.grad is not None
            ]
        )
        if layer.weight.grad is not None:
            grad_matches("W_qkv.weight", layer.weight.grad, right)
        later = [
            2 * torch.randn(size, generator=g)
            for size in ((3, 2, d_in), (1, d_in), shape)
        ]
        return module, reference, later, "output"

    for later in each_seed(once):
        later_calls(*later, eval_too=True)
    shape = {"what": "output", "shape": "(..., num_tokens, d_out)"}
    checks = [("shape", shape), ("values", values_on("lib_v2"))]
    checks += [("grad_values", {}), ("calls", {})]
    return [*checks, ("eval", {})]


def _torch_causal(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        # Two seeds in a row share their sizes, with other weights and
        # inputs: a result kept by shape shows.
        size = seed // 2
        num_heads = 1 + size % 3
        embed_dim = num_heads * (1 + (size // 3) % 3)
        # 4 tokens first: the first failure gives the hint, and a mask from
        # diagonal=2 hides no key of 2 tokens, and few of 3 (the first
        # seed's one feature saturates the softmax), as no mask does
        b, t = 1 + size % 2, 2 + (size + 2) % 5
        seed_weights(seed)
        mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        # The tokens' vectors are trained through it too.
        x = (2 * torch.randn(b, t, embed_dim, generator=g)).requires_grad_()
        ones = torch.ones(t, t, dtype=torch.bool)

        def masked(mask: torch.Tensor | None) -> torch.Tensor:
            out: torch.Tensor = mha(
                x, x, x, attn_mask=mask, need_weights=False
            )[0]
            return out.detach()

        wrong = {
            # True = the keys it may see, SDPA's convention
            "mask_polarity": lambda: masked(torch.tril(ones)),
            # a float mask is added to the scores: the later keys get 0
            # (or 1) added, not -inf
            "float_keep": lambda: masked(torch.tril(ones).float()),
            "float_keep:ones": lambda: masked(causal_mask(t).float()),
            "causal_diagonal": lambda: masked(torch.triu(ones)),
            "causal_diagonal:next": lambda: masked(torch.triu(ones, 2)),
            "no_mask": lambda: masked(None),
        }
        out = call(answer, mha, x, wrong=wrong)
        expect(out, masked(causal_mask(t)), "output", wrong)
        backward(out, mha, "output")
        if x.grad is None:
            raise WrongAnswerError("no_grad", "detached", name="x")
        # In eval mode without autograd, nn.MultiheadAttention takes its
        # fast path, which reads attn_mask even where is_causal=True says
        # it is the causal one: a wrong mask under the hint shows there.
        mha.eval()
        with torch.no_grad():
            out = call(answer, mha, x, watch=False)
            expected = masked(causal_mask(t))
        with hinted("causal_hint", unless_named=True):
            expect(out, expected, "output")

    each_seed(once)
    shape = {"what": "output", "shape": "(b, num_tokens, embed_dim)"}
    checks = [("shape", shape), ("values", values_on("lib_torch_causal"))]
    return [*checks, ("future", {}), ("grad", {}), ("eval_fast_path", {})]


#: How far a result in each dtype may be from the float32 weights: a
#: softmax computed in float32 and cast back is as right as one computed
#: in the dtype itself.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def _weights_flow(
    out: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor
) -> Flow:
    """The reader's weights ``out``, computed from the trained ``scores``:
    their gradient must be the one masked_softmax sends back."""
    return (
        out,
        {"attn_scores": scores},
        "weights",
        lambda copies: masked_softmax(copies["attn_scores"], mask),
    )


def _masked_rows(out: torch.Tensor, hidden: torch.Tensor) -> None:
    """The rows of the weights whose every key is masked (``hidden``, of
    the weights' shape but the last) must be zeros: what the reader's
    weights there are, when they are not."""
    row = int(hidden.nonzero()[0][-1])  # the query of the first such row
    seen = out[hidden]
    if not torch.isfinite(seen).all():
        raise WrongAnswerError("masked_row_nan", "inf_fill", row=row)
    if seen.any():
        raise WrongAnswerError("masked_row", "no_zero", row=row)


def _masks(
    seed: int, lead: tuple[int, ...], n: int, g: torch.Generator
) -> torch.Tensor:
    """A mask that hides every key from some query: causal and padding in
    one (n, n) mask, with one query that sees nothing; or, on a batch,
    padding alone, shaped to broadcast (b, 1, ..., 1, n), every key of the
    first sequence hidden."""
    if seed % 2 == 0 or not lead:
        mask = causal_mask(n) | (torch.rand(n, generator=g) < 0.3)
        mask[seed % n] = True
        return mask
    padding = torch.rand(lead[0], n, generator=g) < 0.3
    padding[0] = True
    return padding.view(lead[0], *[1] * len(lead), n)


def _masked_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Flow:
        g = torch.Generator().manual_seed(seed)
        # Two seeds in a row share dtype and shape, with other values: a
        # result, or a fill value, kept from the call before shows.
        size = seed // 2
        dtype = list(TOLERANCE)[size % 3]
        lead = [(), (2,), (2, 2)][(size // 3) % 3]
        n = 3 + size % 4
        scores = 3 * torch.randn(*lead, n, n, generator=g)
        mask = _masks(seed, lead, n, g)
        if seed % 4 == 1:
            # Scores far below any fixed fill value (as far as float16
            # reaches): a fill that is not the most negative number of the
            # dtype takes their weight.
            scores = scores - (3e4 if dtype == torch.float16 else 1e5)
        reference = masked_softmax(scores, mask)  # float32
        scores = scores.to(dtype)
        hidden = mask.expand(scores.shape).all(dim=-1)
        expected = masked_softmax(scores, mask)

        lowest = torch.finfo(dtype).min

        def filled(
            value: float,
            hide: torch.Tensor = mask,
            zero: torch.Tensor = mask,
            dim: int = -1,
            root: float = 1.0,
        ) -> torch.Tensor:
            weights = torch.softmax(
                (scores / root).masked_fill(hide, value), dim=dim
            )
            return weights.masked_fill(zero, 0.0)

        wrong = {
            # First: on scores far below them, the fixed fill values give
            # the zeros that 0, or the mask the wrong way round, give
            # (which fail on scores near 0 before).
            "inf_fill": lambda: filled(-torch.inf),
            "small_fill": lambda: filled(-1e4),
            "big_fill": lambda: filled(-1e9),
            "no_zero": lambda: torch.softmax(
                scores.masked_fill(mask, lowest), dim=-1
            ),
            # the masked keys kept, the visible ones zeroed; or only the
            # fill the wrong way round
            "mask_polarity": lambda: filled(lowest, ~mask, ~mask),
            "mask_polarity:fill": lambda: filled(lowest, ~mask),
            # filled with 0, or no fill before the softmax
            "mask_fill_zero": lambda: filled(0.0),
            "mask_fill_zero:after": lambda: torch.softmax(
                scores, dim=-1
            ).masked_fill(mask, 0.0),
            # over the queries, the batch, the heads
            "softmax_dim": lambda: filled(lowest, dim=-2),
            "softmax_dim:0": lambda: filled(lowest, dim=0),
            "softmax_dim:1": lambda: filled(lowest, dim=1),
            # the given scores divided by sqrt(num_keys) again
            "scale_extra": lambda: filled(lowest, root=n**0.5),
        }
        # The scores are trained through the weights.
        leaf = scores.clone().requires_grad_()
        out = call(answer, leaf, mask, wrong=wrong)
        try:
            expect(out, expected, "weights", wrong)
        except WrongAnswerError as failure:
            if failure.hint != "compare" or not (
                isinstance(out, torch.Tensor)
                and out.dtype == dtype
                and out.shape == expected.shape
            ):
                raise
            if not torch.allclose(
                out.float(), reference, rtol=0, atol=TOLERANCE[dtype]
            ):
                _masked_rows(out, hidden)
                raise
            # as right, computed another way
        return _weights_flow(out, leaf, mask)

    for flow in each_seed(once):
        with hinted("nan_grad", unless_named=True):
            gradients_flow(*flow)
    checks = [("values", values_on("lib_masked_softmax"))]
    checks += [("dtypes", {}), ("masked_rows", {})]
    return [*checks, ("grad_inputs", {"names": "attn_scores"})]


def _causal_any_batch(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Flow:
        g = torch.Generator().manual_seed(seed)
        # A batch of heads first, where dim=1, dim=0 and dim=-2 are three
        # other axes; then a batch, one matrix, a batch of one, and five
        # dimensions, which no table of axes by rank foresees. Two seeds in
        # a row share a shape, with other values.
        size = seed // 2
        lead = [(2, 3), (2,), (), (1,), (2, 1, 2)][size % 5]
        n = 3 + size % 4
        # Scores in the hundreds now and then: a softmax that does not
        # subtract the row's largest score overflows.
        spread = 100.0 if size % 4 == 3 else 2.0
        scores = spread * torch.randn(*lead, n, n, generator=g)
        mask = causal_mask(n)
        filled = scores.masked_fill(mask, -torch.inf)
        ones = torch.ones(n, n, dtype=torch.bool)

        def hidden(hide: torch.Tensor) -> torch.Tensor:
            return torch.softmax(scores.masked_fill(hide, -torch.inf), -1)

        wrong: dict[str, Any] = {
            # dim=1, the keys of one matrix only; the batch; the queries
            "softmax_dim": lambda: torch.softmax(filled, dim=1),
            "softmax_dim:0": lambda: torch.softmax(filled, dim=0),
            "softmax_dim:queries": lambda: torch.softmax(filled, dim=-2),
            "no_causal": lambda: torch.softmax(scores, dim=-1),
            "naive": lambda: filled.exp() / filled.exp().sum(-1, keepdim=True),
            # each token hidden from itself (diagonal=0), or the next one
            # seen (diagonal=2)
            "causal_diagonal": lambda: hidden(ones.triu()),
            "causal_diagonal:zeros": lambda: masked_softmax(
                scores, ones.triu()
            ),
            "causal_diagonal:next": lambda: hidden(ones.triu(2)),
            # tril: the keys a query may see, hidden
            "mask_polarity": lambda: hidden(~mask),
            "mask_polarity:zeros": lambda: masked_softmax(scores, ~mask),
            # the later keys' scores filled with 0, or their weights zeroed
            # after a softmax over every key
            **variants({"mask_fill_zero": fill_zero_ways(scores, mask)}),
            # the given scores divided by sqrt(num_tokens) again
            "scale_extra": lambda: torch.softmax(
                (scores / n**0.5).masked_fill(mask, -torch.inf), dim=-1
            ),
        }
        # The scores are trained through the weights.
        leaf = scores.clone().requires_grad_()
        expected = masked_softmax(scores, mask)
        out = call(answer, leaf, wrong=wrong)
        expect(out, expected, "weights", wrong)
        return _weights_flow(out, leaf, mask)

    for flow in each_seed(once):
        gradients_flow(*flow)
    checks = [("values", values_on("lib_causal_any")), ("batch_dims", {})]
    return [*checks, ("grad_inputs", {"names": "attn_scores"})]


EXERCISES = [
    Exercise(
        "exercise-fused-projection-bug",
        _fused,
        WORDS,
        reference="lib_v2",
        # scaling twice (queries divided by sqrt(d_out), then SDPA) gives
        # the outputs of dividing by d_out: scale_by_d_k
        mistakes=SCALING | {"dot_T", "softmax_dim"},
    ),
    Exercise(
        "exercise-split-order-bug",
        multihead.check_split_heads,
        multihead.WORDS,
        Rules(
            functions={
                "split_heads": split_heads,
                "transpose_qkv": transpose_qkv,
            }
        ),
        reference="lib_split",
        mistakes=SPLIT_MISTAKES,
    ),
    Exercise(
        "exercise-torch-mask-bug",
        _torch_causal,
        WORDS,
        reference="lib_torch_causal",
        # nn.MultiheadAttention takes the mask and computes the softmax: no
        # fill value, no weights to zero. Its nearest, a float mask of ones
        # and zeros, is `float_keep`.
        mistakes=frozenset({"mask_polarity", "causal_diagonal"}),
    ),
    Exercise(
        "exercise-out-proj-bug",
        multihead.check_multi_head,
        multihead.WORDS,
        # The library's module, which exercise 8's code subclasses: made or
        # run, it would size out_proj for the reader.
        Rules(
            functions={
                "MultiHeadAttention": MultiHeadAttention.__init__,
                "MultiHeadAttention.forward": MultiHeadAttention.forward,
            }
        ),
        reference="lib_mha",
        mistakes=MULTI_HEAD_MISTAKES,
    ),
    Exercise(
        "exercise-fill-value-bug",
        _masked_weights,
        WORDS,
        Rules(functions={"masked_softmax": masked_softmax}),
        reference="lib_masked_softmax",
        mistakes=frozenset(
            {"scale_extra", "softmax_dim", "mask_polarity", "mask_fill_zero"}
        ),
    ),
    Exercise(
        "exercise-softmax-dim-bug",
        _causal_any_batch,
        WORDS,
        reference="lib_causal_any",
        mistakes=MASKING | {"scale_extra", "softmax_dim"},
    ),
    Exercise(
        "exercise-head-scale-bug",
        multihead.check_multi_head,
        multihead.WORDS,
        # The page's module inherits the library's layers; the forward pass,
        # whose scale is the exercise, must be the reader's: not the
        # inherited one, nor exercise 5's, which leaves the scale to SDPA.
        Rules(
            functions={
                "MultiHeadAttention.forward": MultiHeadAttention.forward,
            },
            torch_functions=frozenset({"scaled_dot_product_attention"}),
        ),
        reference="lib_mha",
        mistakes=MULTI_HEAD_MISTAKES,
    ),
]
