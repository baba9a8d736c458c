"""The exercises of the from scratch to PyTorch (pytorch-equivalence) chapter."""

from __future__ import annotations

import copy
import functools
import itertools
import math
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.masks import causal_mask, masked_softmax
from attention_lib.multihead import MultiHeadAttention
from torch import nn

from ._core import (
    CAUSAL_ATTENTION,
    Exercise,
    Ways,
    WrongAnswerError,
    backward,
    call,
    each_seed,
    expect,
    seed_weights,
    shares_memory,
    values_on,
    variants,
)
from ._messages import Messages, messages

WORDS: Messages = messages("equivalence")


def _copied(
    start: nn.MultiheadAttention,
    mha: MultiHeadAttention,
    order: tuple[int, int, int] = (0, 1, 2),
    bias_order: tuple[int, int, int] | None = None,
    transpose: bool = False,
    in_bias: str = "copy",
    out_proj: str = "copy",
) -> nn.MultiheadAttention:
    """``start`` with ``mha``'s weights copied in, right or in one of the
    typical wrong ways."""
    torch_mha = copy.deepcopy(start)
    layers = [mha.W_query, mha.W_key, mha.W_value]
    weights = [
        layers[i].weight.T if transpose else layers[i].weight for i in order
    ]
    biases: list[torch.Tensor] = [
        torch.zeros(mha.d_out) if layers[i].bias is None else layers[i].bias
        for i in (order if bias_order is None else bias_order)
    ]
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat(weights))
        if in_bias == "copy":
            torch_mha.in_proj_bias.copy_(torch.cat(biases))
        elif in_bias == "zero":
            torch_mha.in_proj_bias.zero_()
        if out_proj in ("copy", "weight"):
            torch_mha.out_proj.weight.copy_(mha.out_proj.weight)
        if out_proj == "copy":
            torch_mha.out_proj.bias.copy_(mha.out_proj.bias)
    return torch_mha


def _run(
    torch_mha: nn.MultiheadAttention, x: torch.Tensor, grad: bool = False
) -> torch.Tensor:
    t = x.shape[1]
    with torch.set_grad_enabled(grad):
        # The class's own forward: one the answer set on the instance does
        # not count.
        out, _ = nn.MultiheadAttention.forward(
            torch_mha, x, x, x, attn_mask=causal_mask(t), need_weights=False
        )
    return out


def _copy_into_torch(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # d >= 2: a (1, 1) weight would hide a transpose
        num_heads, head_dim = 1 + seed % 3, 2 + seed % 2
        d = num_heads * head_dim
        b, t = 1 + seed % 2, 2 + seed % 4
        qkv_bias = seed % 2 == 1
        seed_weights(seed)
        mha = MultiHeadAttention(d, d, 8, 0.0, num_heads, qkv_bias).eval()
        torch_mha = nn.MultiheadAttention(d, num_heads, batch_first=True)
        torch_mha.eval()
        with torch.no_grad():
            # Whatever it held before (a model trained for something else):
            # every parameter must be written, biases too.
            for parameter in torch_mha.parameters():
                parameter.normal_()
        start = copy.deepcopy(torch_mha)
        x = torch.rand(b, t, d, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected = mha(
                x
            )  # no weights asked for: a tensor (the overloads say so)

        def run(**how: Any) -> torch.Tensor:
            return _run(_copied(start, mha, **how), x)

        try:
            call(answer, torch_mha, mha, changes=(0,))
        except WrongAnswerError as failure:
            said = str(failure.fields.get("error", ""))
            if "as parameter" in said:
                failure.hint = "assign"
            elif "in-place operation" in said:
                failure.hint = "no_grad"
            raise
        out = _run(torch_mha, x)
        # A wrong order of the weights, the biases in the same order or not.
        orders = [
            p for p in itertools.permutations(range(3)) if p != (0, 1, 2)
        ]
        reordered = [
            functools.partial(run, order=p, bias_order=bias_order)
            for p in orders
            for bias_order in (p, (0, 1, 2))
        ]
        wrong = variants(
            {
                "order": reordered,
                "transpose": [lambda: run(transpose=True)],
                "in_bias": [
                    lambda: run(in_bias="keep"),
                    lambda: run(in_bias="zero"),
                ],
                "out_proj": [
                    lambda: run(out_proj="keep"),
                    lambda: run(out_proj="weight"),
                ],
                "in_place": [lambda: _run(start, x)],
            }
        )
        expect(out, expected, "torch_output", wrong)
        backward(_run(torch_mha, x, grad=True), torch_mha, "torch_output")
        if shares_memory(torch_mha, mha):
            shared.append(seed)

    shared: list[int] = []
    each_seed(once)
    values = values_on("lib_mha")
    checked = [("values", values), ("biases", {}), ("grad", {})]
    if shared:  # right, and yet not a copy
        checked.append(("shares", {"target": "torch_mha", "source": "mha"}))
    return checked


def _sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **how: Any
) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, **how)


def _sdpa_padding(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # Two heads on the first seed, where head_dim is 1 (no scaling
        # shows but by the wrong size: the root of the number of heads);
        # 4 or 6 tokens on even seeds, 3 or 5 on odd ones.
        b, num_heads, t = 2, 2 - seed % 2, 3 + (seed + 1) % 4
        head_dim = 1 + seed % 3
        g = torch.Generator().manual_seed(seed)
        q, k, v = (
            torch.randn(b, num_heads, t, head_dim, generator=g)
            for _ in range(3)
        )
        # On even seeds every sequence has three real tokens or more and
        # ends in padding (where the typical mistakes differ: with three, a
        # query that sees the next key is not one that sees every key); on
        # odd ones it has one real token or more, and perhaps no padding.
        low, high = (3, t) if seed % 2 == 0 else (1, t + 1)
        lengths = torch.randint(low, high, (b,), generator=g)
        key_padding_mask = torch.arange(t) >= lengths[:, None]  # (b, t)
        causal = causal_mask(t)
        padding = key_padding_mask[:, None, None, :]  # (b, 1, 1, t)
        mask = causal | padding  # (b, 1, t, t), True = masked out
        scores = q @ k.transpose(-2, -1) / head_dim**0.5  # (b, h, t, t)
        expected = masked_softmax(scores, mask) @ v
        ones = torch.ones(t, t, dtype=torch.bool)

        def by_hand(
            hidden: torch.Tensor, scale: float = head_dim**0.5, dim: int = -1
        ) -> torch.Tensor:
            # The explicit path, hidden = True where masked out.
            weights = masked_softmax(
                q @ k.transpose(-2, -1) / scale, hidden, dim
            )
            return weights @ v

        def filled(
            hidden: torch.Tensor, fill: float, dim: int = -1
        ) -> torch.Tensor:
            return torch.softmax(scores.masked_fill(hidden, fill), dim) @ v

        def swapped(keys_t: torch.Tensor) -> torch.Tensor:
            # Keys transposed counted from the front, in the reader's order.
            swapped_scores = q @ keys_t / math.sqrt(head_dim)
            swapped_scores = swapped_scores.masked_fill(mask, -torch.inf)
            return torch.softmax(swapped_scores, dim=-1) @ v

        ways: Ways = {
            # A part of the mask, or all of it, the wrong way round.
            "mask_polarity": [
                lambda: _sdpa(q, k, v, attn_mask=mask),
                lambda: _sdpa(q, k, v, attn_mask=~causal & padding),
                lambda: _sdpa(q, k, v, attn_mask=causal & ~padding),
                lambda: by_hand(~mask),
            ],
            # The causal part one diagonal off, either side.
            "causal_diagonal": [
                lambda: _sdpa(q, k, v, attn_mask=ones.tril(1) & ~padding),
                lambda: _sdpa(q, k, v, attn_mask=ones.tril(-1) & ~padding),
                lambda: by_hand(ones.triu(2) | padding),
                lambda: by_hand(ones.triu(0) | padding),
            ],
            "no_causal": [lambda: _sdpa(q, k, v, attn_mask=~padding)],
            "no_padding": [lambda: _sdpa(q, k, v, is_causal=True)],
            "combine": [lambda: _sdpa(q, k, v, attn_mask=~causal | ~padding)],
            # The causal part turned around, the padding left True = hidden.
            "causal_only_inverted": [
                lambda: _sdpa(q, k, v, attn_mask=~causal | padding)
            ],
            # The padding on the queries' axis, (b, 1, t, 1): rows hidden.
            "padding_queries": [
                lambda: _sdpa(
                    q,
                    k,
                    v,
                    attn_mask=~(causal | key_padding_mask[:, None, :, None]),
                )
            ],
            # The attention written out, the hidden scores filled with 0 or
            # the weights zeroed after the softmax: the hidden keys keep a
            # weight, or the rows no longer sum to 1.
            "mask_fill_zero": [
                lambda: filled(mask, 0.0),
                lambda: torch.softmax(scores, -1).masked_fill(mask, 0) @ v,
            ],
            # A float mask of ones and zeros as SDPA's attn_mask, added to
            # the scores: not a fill value, a mistake of its own.
            "float_keep": [
                lambda: _sdpa(q, k, v, attn_mask=mask.float()),
                lambda: _sdpa(q, k, v, attn_mask=(~mask).float()),
            ],
            "scale_missing": [lambda: by_hand(mask, 1.0)],
            "scale_by_d_k": [lambda: by_hand(mask, head_dim)],
            # The root of the number of heads (`keys.shape[1]`), or tokens.
            "scale_wrong_size": [
                lambda: by_hand(mask, math.sqrt(num_heads)),
                lambda: by_hand(mask, math.sqrt(t)),
            ],
            "softmax_dim": [
                *(functools.partial(by_hand, mask, dim=d) for d in (-2, 1, 0)),
                *(
                    functools.partial(filled, mask, -torch.inf, d)
                    for d in (-2, 1, 0)
                ),
            ],
            "dot_T": [
                lambda: swapped(k.transpose(1, 2)),
                lambda: swapped(k.T),
            ],
        }
        args = (q, k, v, key_padding_mask.clone())
        out = call(answer, *args, wrong=variants(ways))
        expect(out, expected, "context", variants(ways))

    each_seed(once)
    shape = {"what": "context", "shape": "(b, num_heads, t, head_dim)"}
    values = values_on("lib_masked")
    return [("shape", shape), ("values", values), ("padded", {})]


EXERCISES = [
    Exercise(
        "exercise-copy-into-torch-mha",
        _copy_into_torch,
        WORDS,
        reference="lib_mha",
    ),
    Exercise(
        "exercise-sdpa-mask-bug",
        _sdpa_padding,
        WORDS,
        reference="lib_masked",
        mistakes=CAUSAL_ATTENTION,
    ),
]
