"""The exercises of the multi-head attention chapter: splitting a projection
into heads, and a whole multi-head forward pass whose heads are merged
back."""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any

import torch
from attention_lib.heads import split_heads, transpose_qkv
from attention_lib.masks import causal_mask
from attention_lib.multihead import MultiHeadAttention
from torch import nn

from ._core import (
    Exercise,
    Flow,
    Later,
    WrongAnswerError,
    backward,
    call,
    each_seed,
    expect,
    gradients_flow,
    hinted,
    later_calls,
    layers_match,
    linear_named,
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
            "split_view": lambda: x.view(b, h, t, hd),
            # (b, t, d_out) -> (b, t, h, hd), the heads left behind
            "no_transpose": lambda: x.view(b, t, h, hd),
            # (b, t, d_out) -> (b, t, hd, h) -> (b, hd, t, h): interleaved
            "wrong_axis": lambda: x.view(b, t, hd, h).transpose(1, 2),
            # the same cut, the heads then moved in front: every h-th feature
            "interleaved": lambda: x.view(b, t, hd, h).permute(0, 3, 1, 2),
            # (b, t, d_out) -> (b, d_out, t) -> (b, h, t, hd): features of
            # one token spread over the rows of a head
            "transpose_first": lambda: x.transpose(1, 2).reshape(b, h, t, hd),
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


def _attend(
    reference: MultiHeadAttention,
    x: torch.Tensor,
    *,
    merge: str = "right",
    scale: float | None = None,
    causal: bool = True,
) -> torch.Tensor:
    """The reference's forward pass, written out, with one of the typical
    mistakes when asked for."""
    b, t, _ = x.shape
    h, hd = reference.num_heads, reference.head_dim
    d_out = h * hd
    with torch.no_grad():
        # (b, t, d_out) -> (b, t, h, hd) -> (b, h, t, hd)
        q = reference.W_query(x).view(b, t, h, hd).transpose(1, 2)
        k = reference.W_key(x).view(b, t, h, hd).transpose(1, 2)  # as q
        v = reference.W_value(x).view(b, t, h, hd).transpose(1, 2)  # as q
        scores = q @ k.transpose(2, 3)  # (b, h, t, hd) @ (b, h, hd, t)
        if causal:
            scores = scores.masked_fill(causal_mask(t), -torch.inf)
        root = math.sqrt(hd) if scale is None else scale
        context = torch.softmax(scores / root, dim=-1) @ v  # (b, h, t, hd)
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


#: (num_heads, head_dim) of each seed: never equal, so that scaling by
#: sqrt(d_out) and by head_dim are told apart.
SIZES = [(2, 3), (3, 2), (4, 2), (2, 4), (3, 4)]


def check_multi_head(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Later:
        h, hd = SIZES[seed % len(SIZES)]
        b, t, d_in, d_out = 1 + seed % 2, 2 + seed % 4, 2 + seed % 3, h * hd
        seed_weights(seed)
        module = call(answer, d_in, d_out, h)
        if not isinstance(module, nn.Module):
            name = getattr(answer, "__name__", "answer")
            got = type(module).__name__
            raise WrongAnswerError("not_module", "define", name=name, got=got)
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
        wrong = {
            "merge_view": lambda: _attend(reference, x, merge="view"),
            "contiguous": lambda: _attend(reference, x, merge="no_contiguous"),
            "scale_d_out": lambda: _attend(reference, x, scale=d_out**0.5),
            "scale_d_k": lambda: _attend(reference, x, scale=float(hd)),
            "no_mask": lambda: _attend(reference, x, causal=False),
        }
        out = call(module, x, wrong=wrong)
        with torch.no_grad():
            expected = reference(
                x
            )  # no weights asked: a tensor (the overloads say so)
        with (
            hinted("bias", unless_named=True) if extra_bias else nullcontext()
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


EXERCISES = [
    Exercise(
        "exercise-split-heads-by-hand",
        check_split_heads,
        WORDS,
        Rules(
            functions={
                "split_heads": split_heads,
                "transpose_qkv": transpose_qkv,
            }
        ),
        reference="lib_split",
    ),
    Exercise(
        "exercise-merge-heads-bug",
        check_multi_head,
        WORDS,
        reference="lib_mha",
    ),
]
