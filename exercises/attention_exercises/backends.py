"""The exercises of the attention backends chapter: causal attention through
``F.scaled_dot_product_attention``, with and without a padding mask."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.masks import causal_mask, masked_softmax

from ._core import (
    MASKING,
    Exercise,
    call,
    each_seed,
    expect,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("backends")


def _causal_sdpa(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        b, num_heads, n = 1 + seed % 3, 1 + seed % 2, 2 + seed % 5
        head_dim = 2 + seed % 3  # at least 2: a scale of √1 would hide one
        g = torch.Generator().manual_seed(seed)
        q, k, v = (
            torch.randn(b, num_heads, n, head_dim, generator=g)
            for _ in range(3)
        )
        causal = causal_mask(n)
        padded = seed % 2 == 1
        padding: torch.Tensor | None = None
        mask = causal
        if padded:
            # At least one real key per sequence, so that no row is empty,
            # and 3 in the first (all if fewer, all but one if it is alone,
            # so that it is still padded): with fewer, a causal mask one
            # key too far, or none, hides only what the padding hides.
            lens = torch.randint(1, n + 1, (b,), generator=g)
            lens[0] = lens[0].clamp(min=min(n - (b == 1), 3))
            padding = torch.arange(n) >= lens[:, None]  # (b, n), True = pad
            # (n, n) | (b, 1, 1, n) -> (b, 1, n, n)
            mask = causal | padding[:, None, None, :]
        scores = q @ k.transpose(-2, -1) / head_dim**0.5
        expected = masked_softmax(scores, mask) @ v

        def sdpa(
            query: torch.Tensor, attn_mask: torch.Tensor | None
        ) -> Callable[[], torch.Tensor]:
            return lambda: F.scaled_dot_product_attention(
                query, k, v, attn_mask=attn_mask
            )

        # Without padding the right answer passes no mask (is_causal=True),
        # but one that always builds a mask gets it wrong the same ways: the
        # wrong masks are then made of the causal mask alone.
        pad = None if padding is None else padding[:, None, None, :]
        ones = torch.ones(n, n, dtype=torch.bool)

        def hiding(later: torch.Tensor) -> Callable[[], torch.Tensor]:
            """A wrong causal mask, with the padding where there is some."""
            return sdpa(q, ~(later if pad is None else later | pad))

        # SDPA's own scale made a wrong one: by d_k (the queries scaled
        # first), by the root of d_out, of the number of tokens, of heads
        # (but not of 1 head: no scale at all, which SDPA never leaves).
        root = head_dim**0.5
        sizes = (num_heads * head_dim, n, num_heads)
        ways: dict[str, list[Callable[[], torch.Tensor]]] = {
            "mask_polarity": [sdpa(q, mask)],
            # A float mask is added to the scores: ones at the keys that may
            # be seen (or, the same after the softmax, -1 at the others).
            "float_keep": [sdpa(q, (~mask).float())],
            "float_masked": [sdpa(q, mask.float())],
            "scale_by_d_k": [sdpa(q / root, ~mask)],
            "scale_wrong_size": [
                sdpa(q * root / size**0.5, ~mask) for size in sizes if size > 1
            ],
            "no_causal": [sdpa(q, None if pad is None else ~pad)],
            "causal_diagonal": [hiding(ones.triu(0)), hiding(ones.triu(2))],
        }
        if padding is not None:
            ways |= {
                # is_causal=True whatever the padding.
                "no_padding": [sdpa(q, ~causal)],
                # The padding on the queries' axis, or on a (b, 1, n) mask
                # that SDPA lines up with the heads: (b, n, n) is (1, b, n, n).
                "padding_queries": [
                    sdpa(q, ~(causal | padding[:, None, :, None]))
                ],
                "padding_heads": [sdpa(q, ~(causal | padding[:, None, :]))],
                # The keep masks joined with | where it takes &.
                "keep_or": [sdpa(q, ~causal | ~padding[:, None, None, :])],
            }
        args = (q.clone(), k.clone(), v.clone(), padding)
        out = call(answer, *args, wrong=variants(ways))
        expect(out, expected, "context", variants(ways))

    each_seed(once)
    shape = {"what": "context", "shape": "(batch, num_heads, n, head_dim)"}
    values = values_on("lib_masked")
    return [("shape", shape), ("values", values), ("both_cases", {})]


#: SDPA computes the product, the scale and the softmax: what a reader can
#: get wrong is the mask and a scale passed to it. Not `mask_fill_zero`: SDPA
#: takes no fill value, and its nearest, a float mask of ones and zeros, is
#: a mistake of its own (`float_keep`).
_MISTAKES = (MASKING - {"mask_fill_zero"}) | {
    "scale_by_d_k",
    "scale_wrong_size",
}

EXERCISES = [
    Exercise(
        "exercise-causal-sdpa",
        _causal_sdpa,
        WORDS,
        Rules(sdpa_calls=1, causal_alone=True),
        reference="lib_masked",
        mistakes=_MISTAKES,
    ),
    Exercise(
        "exercise-sdpa-float-mask-bug",
        _causal_sdpa,
        WORDS,
        reference="lib_masked",
        mistakes=_MISTAKES,
    ),
]
