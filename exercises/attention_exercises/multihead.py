"""The exercises of the multi-head attention chapter: splitting a projection
into heads, and a whole multi-head forward pass whose heads are merged
back."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch
from attention_lib.heads import split_heads, transpose_qkv
from attention_lib.masks import causal_mask
from attention_lib.multihead import MultiHeadAttention

from ._core import (
    CAUSAL_ATTENTION,
    Exercise,
    Flow,
    Later,
    backward,
    call,
    each_seed,
    expect,
    gradients_flow,
    hinted,
    later_calls,
    layers_match,
    linear_named,
    module_from,
    seed_weights,
    values_on,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("multihead")


def check_split_heads(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Flow:
        g = torch.Generator().manual_seed(seed)
        # num_tokens apart from both head sizes, so that no two mistakes
        # give the same tensor; h == hd now and then
        b, t = 1 + seed % 3, 5 + seed % 3
        h, hd = 2 + seed % 3, 1 + (seed + 2) % 4
        # The heads are trained through: the projection must get the right
        # gradients. Every third seed's projection is the middle third of a
        # fused one (`qkv.chunk(3, dim=-1)`), a tensor that is not
        # contiguous.
        d_out = h * hd
        fused = seed % 3 == 2
        base = torch.rand(b, t, 3 * d_out if fused else d_out, generator=g)
        base.requires_grad_()

        def part(whole: torch.Tensor) -> torch.Tensor:
            return whole[..., d_out : 2 * d_out] if fused else whole

        x = part(base)
        wrong = {
            # (b, t, d_out) -> (b, h, t, hd) in one go: tokens cut apart
            "view_no_transpose": lambda: x.view(b, h, t, hd),
            # (b, t, d_out) -> (b, t, h, hd), the heads left behind
            "view_no_transpose:shape": lambda: x.view(b, t, h, hd),
            # (b, t, d_out) -> (b, t, hd, h) -> (b, hd, t, h): interleaved
            "wrong_axis": lambda: x.view(b, t, hd, h).transpose(1, 2),
            # the same cut, the heads then moved in front: every h-th feature
            "interleaved": lambda: x.view(b, t, hd, h).permute(0, 3, 1, 2),
            # (b, t, d_out) -> (b, d_out, t) -> (b, h, t, hd): features of
            # one token spread over the rows of a head
            "transpose_first": lambda: x.transpose(1, 2).reshape(b, h, t, hd),
            # the view right, then the last two swapped: each head with its
            # features, not the heads with the tokens
            "heads_axes": lambda: x.view(b, t, h, hd).transpose(-2, -1),
        }
        if h != 2:  # the page's two heads, whatever num_heads says
            wrong["fixed_heads"] = lambda: x.view(b, t, 2, -1).transpose(1, 2)
        out = call(answer, x, h, wrong=wrong)
        expect(out, split_heads(x, h), "heads", wrong)
        return (
            out,
            {"x": base},
            "heads",
            lambda it: split_heads(part(it["x"]), h),
        )

    for flow in each_seed(once):
        gradients_flow(*flow)
    shape = {"what": "heads", "shape": "(b, num_heads, num_tokens, head_dim)"}
    checks = [("shape", shape), ("values", values_on("lib_split"))]
    return [*checks, ("grad_inputs", {"names": "x"})]


def check_split_any_lead(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    """`check_split_heads`, then inputs with no leading dimension and with
    two: the write-it asks for any number of them."""
    checks = check_split_heads(answer)

    def once(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        h, hd, t = 2 + seed % 2, 1 + seed % 3, 3 + seed % 3
        # One sequence, then a batch of batches, (b, c, t, d_out), whose
        # first two dimensions differ from t: a transpose counted from the
        # front swaps other dimensions than the heads and the tokens.
        lead = [(), (2, 4)][seed % 2]
        x = torch.rand(*lead, t, h * hd, generator=g)
        # The library splits a batch: the sequences, one batch.
        flat = split_heads(x.reshape(-1, t, h * hd), h)
        expected = flat.reshape(*lead, h, t, hd)
        swapped = {"heads_axes": lambda: x.view(*lead, t, h, hd).mT}
        with hinted("leading_dims", unless_named=True):
            expect(
                call(answer, x, h, wrong=swapped), expected, "heads", swapped
            )

    each_seed(once)
    shape = {
        "what": "heads",
        "shape": "(..., num_heads, num_tokens, head_dim)",
    }
    return [("shape", shape), *checks[1:], ("leading", {})]


def _softmax(
    scores: torch.Tensor,
    hide: torch.Tensor | None,
    root: float,
    *,
    fill: float = -torch.inf,
    dim: int = -1,
    zero: torch.Tensor | None = None,
) -> torch.Tensor:
    """The attention weights of ``scores``: those where ``hide`` is True
    filled with ``fill``, all divided by ``root``, a softmax over ``dim``,
    then the weights where ``zero`` is True set to 0 (masked_softmax's way,
    and SDPA's for a row whose every key is hidden)."""
    filled = scores if hide is None else scores.masked_fill(hide, fill)
    weights = torch.softmax(filled / root, dim=dim)
    return weights if zero is None else weights.masked_fill(zero, 0.0)


def _attend(
    reference: MultiHeadAttention,
    x: torch.Tensor,
    *,
    split: str = "right",
    product: str = "right",
    weights: Callable[[torch.Tensor], torch.Tensor] | None = None,
    merge: str = "right",
) -> torch.Tensor:
    """The reference's forward pass, written out, with one of the typical
    mistakes when asked for: in the split, the keys' transpose, the weights
    (a function of the unscaled scores) or the merge. The steps come in the
    reader's order, so that a wrong answer's raises the same error as the
    reader's code."""
    b, t, _ = x.shape
    h, hd = reference.num_heads, reference.head_dim
    d_out = h * hd

    def heads(projected: torch.Tensor) -> torch.Tensor:
        if split == "view":  # (b, t, d_out) -> (b, h, t, hd), cut wrong
            return projected.view(b, h, t, hd)
        # (b, t, d_out) -> (b, t, h, hd) -> (b, h, t, hd)
        return projected.view(b, t, h, hd).transpose(1, 2)

    with torch.no_grad():
        q = heads(reference.W_query(x))
        k = heads(reference.W_key(x))
        v = heads(reference.W_value(x))
        if product == "T":  # every dimension reversed: (hd, t, h, b)
            scores = q @ k.T
        elif product == "front":  # (b, h, t, hd) -> (b, t, h, hd)
            scores = q @ k.transpose(1, 2)
        else:
            scores = q @ k.transpose(2, 3)  # (b, h, t, hd) @ (b, h, hd, t)
        if weights is None:
            weights = functools.partial(
                _softmax, hide=causal_mask(t), root=math.sqrt(hd)
            )
        context = weights(scores) @ v  # (b, h, t, hd)
        if merge == "view":
            merged = context.view(b, t, d_out)  # (b, h, t, hd), cut wrong
        elif merge == "no_contiguous":
            # (b, h, t, hd) -> (b, t, h, hd) -> raises where h, t > 1
            merged = context.transpose(1, 2).view(b, t, d_out)
        else:
            # (b, h, t, hd) -> (b, t, h, hd) -> (b, t, d_out)
            merged = context.transpose(1, 2).contiguous().view(b, t, d_out)
        out: torch.Tensor = reference.out_proj(merged)
    return out


def _typical(
    reference: MultiHeadAttention, x: torch.Tensor, d_in: int
) -> dict[str, Callable[[], torch.Tensor]]:
    """What the typical mistakes of a multi-head forward pass return on
    ``x``, by hint: the catalogue's, each made the ways a reader makes it
    (``"mistake:way"``), and the chapter's own."""
    t = x.shape[1]
    h, hd = reference.num_heads, reference.head_dim
    causal = causal_mask(t)
    ones = torch.ones(t, t, dtype=torch.bool)
    lowest = torch.finfo(x.dtype).min

    def attend(**how: Any) -> Callable[[], torch.Tensor]:
        return functools.partial(_attend, reference, x, **how)

    def weighs(
        hide: torch.Tensor | None, root: float = math.sqrt(hd), **how: Any
    ) -> Callable[[], torch.Tensor]:
        return attend(
            weights=functools.partial(_softmax, hide=hide, root=root, **how)
        )

    def masks(hide: torch.Tensor) -> tuple[Callable[[], torch.Tensor], ...]:
        # filled with -inf, a row whose every key is hidden is nan; with
        # masked_softmax (or SDPA), zeros
        return weighs(hide), weighs(hide, fill=lowest, zero=hide)

    polarity, polarity_zeros = masks(~causal)  # tril: the keys it may see
    self_hidden, self_hidden_zeros = masks(ones.triu())  # diagonal=0
    return {
        # the merge, the split, or both, by a view with no transpose
        "view_no_transpose": attend(merge="view"),
        "view_no_transpose:split": attend(split="view"),
        "view_no_transpose:both": attend(split="view", merge="view"),
        "contiguous": attend(merge="no_contiguous"),
        # Before scale_by_d_k: where a wrong size's root is head_dim, the
        # size is the mistake (scaling by head_dim fails on another seed
        # first, where none is).
        "scale_wrong_size": weighs(causal, math.sqrt(h * hd)),
        "scale_wrong_size:tokens": weighs(causal, math.sqrt(t)),
        "scale_wrong_size:heads": weighs(causal, math.sqrt(h)),
        "scale_wrong_size:d_in": weighs(causal, math.sqrt(d_in)),
        # scaled twice (queries divided by sqrt(head_dim), then SDPA) too
        "scale_by_d_k": weighs(causal, float(hd)),
        "scale_missing": weighs(causal, 1.0),
        # over the heads, the queries, the batch
        "softmax_dim": weighs(causal, dim=1),
        "softmax_dim:queries": weighs(causal, dim=-2),
        "softmax_dim:batch": weighs(causal, dim=0),
        "mask_polarity": polarity,
        "mask_polarity:zeros": polarity_zeros,
        "causal_diagonal": self_hidden,
        "causal_diagonal:zeros": self_hidden_zeros,
        "causal_diagonal:next": weighs(ones.triu(2)),
        # the later keys' scores filled with 0, or their weights zeroed
        # after a softmax over every key
        "mask_fill_zero": weighs(causal, fill=0.0),
        "mask_fill_zero:after": weighs(None, zero=causal),
        "dot_T": attend(product="T"),
        "dot_T:front": attend(product="front"),
        "no_mask": weighs(None),
    }


#: (num_heads, head_dim) of each seed: never equal, so that scaling by
#: sqrt(d_out) and by head_dim are told apart.
SIZES = [(2, 3), (3, 2), (4, 2), (2, 4), (3, 4)]


def check_multi_head(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Later:
        h, hd = SIZES[seed % len(SIZES)]
        # 2 to 5 tokens, 3 first: the first failure gives the hint, and of 2
        # tokens a mask from diagonal=2 hides none, as no mask does
        b, t, d_in = 1 + seed % 2, 2 + (seed + 1) % 4, 2 + seed % 3
        d_out = h * hd
        seed_weights(seed)
        module = module_from(answer, d_in, d_out, h, hint="define")
        # Room for one more token: the same module is called again on t + 1.
        reference = MultiHeadAttention(d_in, d_out, t + 1, 0.0, h)
        sizes = {
            "W_query": (d_in, d_out),
            "W_key": (d_in, d_out),
            "W_value": (d_in, d_out),
            "out_proj": (d_out, d_out),
        }
        extra_bias = False
        with torch.no_grad():
            for name, (n_in, n_out) in sizes.items():
                layer = linear_named(module, name, n_in, n_out, "layer_size")
                lib_layer = getattr(reference, name)
                layer.weight.copy_(lib_layer.weight)
                if layer.bias is not None and lib_layer.bias is not None:
                    layer.bias.copy_(lib_layer.bias)
                elif layer.bias is not None:
                    # A bias the library's layer does not have, set as
                    # training would set it: the outputs show it.
                    layer.bias.uniform_(-1.0, 1.0)
                    extra_bias = True
        g = torch.Generator().manual_seed(seed)
        # scores large enough that a wrong scale shows
        x = 2 * torch.randn(b, t, d_in, generator=g)
        wrong = _typical(reference, x, d_in)
        out = call(module, x, wrong=wrong)
        with torch.no_grad():
            expected = reference(
                x
            )  # no weights asked: a tensor (the overloads say so)
        with (
            hinted("bias", unless_named=True) if extra_bias else nullcontext(),
        ):
            expect(out, expected, "output", wrong)
        backward(out, module, "output")
        # The right gradients, not only some: the library's, for the
        # same outputs.
        reference(x).sum().backward()
        layers_match(module, reference, list(sizes))
        later = [
            2 * torch.randn(size, tokens, d_in, generator=g)
            for size, tokens in ((b + 1, t + 1), (1, max(1, t - 1)), (b, t))
        ]
        # Called again after every seed's own checks, whose hints are
        # more precise.
        return module, reference, later, "output"

    for later in each_seed(once):
        later_calls(*later, eval_too=True)
    shape = {"what": "output", "shape": "(b, num_tokens, d_out)"}
    checks = [("shape", shape), ("values", values_on("lib_mha"))]
    checks += [("future", {}), ("grad_values", {}), ("calls", {})]
    return [*checks, ("eval", {})]


#: The catalogue's mistakes a split of the heads can make.
SPLIT_MISTAKES = frozenset({"view_no_transpose"})

#: The catalogue's mistakes a multi-head forward pass can make (scaling twice
#: gives the outputs of dividing by head_dim: scale_by_d_k).
MULTI_HEAD_MISTAKES = CAUSAL_ATTENTION | {"view_no_transpose"}


EXERCISES = [
    Exercise(
        "exercise-split-heads-by-hand",
        check_split_any_lead,
        WORDS,
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
        "exercise-merge-heads-bug",
        check_multi_head,
        WORDS,
        reference="lib_mha",
        mistakes=MULTI_HEAD_MISTAKES,
    ),
]
