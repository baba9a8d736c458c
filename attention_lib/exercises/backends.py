"""The exercises of the attention backends chapter: causal attention through
``F.scaled_dot_product_attention``, with and without a padding mask."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ..masks import causal_mask, masked_softmax
from ._core import COUNT, Exercise, Messages, call, expect, values_on

WORDS: Messages = {
    "lib_masked": {
        "en": "masked_softmax(q @ k.mT / √d, causal_mask(n) | padding) @ v",
        "zh": "masked_softmax(q @ k.mT / √d, causal_mask(n) | padding) @ v",
    },
    "both_cases": {
        "en": "without key_padding_mask, and with one that marks some keys as "
        "padding",
        "zh": "不带 key_padding_mask 和带 key_padding_mask（部分键是填充）"
        "两种情况都检查过",
    },
    "polarity": {
        "en": "SDPA reads a boolean attn_mask the other way round: True "
        "means the key may be attended to. Pass `~mask` for a mask whose "
        "True means masked out (or `to_sdpa_mask(mask)`).",
        "zh": "SDPA 对布尔 attn_mask 的理解正好相反：True 表示这个键可以被关注。"
        "本站的掩码以 True 表示被遮蔽，传入前要取反：`~mask`"
        "（或 `to_sdpa_mask(mask)`）。",
    },
    "float_keep": {
        "en": "a float attn_mask is added to the scores, not used to hide "
        "keys: your 1.0 only raises the visible keys' scores by one, and "
        "the masked keys keep their weight. Pass the boolean mask itself "
        "(True = may attend), or a float one with -inf where masked.",
        "zh": "浮点型的 attn_mask 会被加到分数上，而不是用来遮住键：你的 1.0 "
        "只是把可见键的分数加了 1，被遮蔽的键仍然有权重。应当直接传入布尔掩码，"
        "其中 True 表示可以关注；也可以传入在被遮蔽处为 -inf 的浮点掩码。",
    },
    "float_masked": {
        "en": "a float attn_mask is added to the scores: your 1.0 raises the "
        "masked keys' scores by one instead of hiding them. Pass a boolean "
        "mask whose True means may attend, `~mask`.",
        "zh": "浮点型的 attn_mask 会被加到分数上：你的 1.0 把被遮蔽的键的分数加了 "
        "1，而不是把它们遮住。要传入 True 表示可以关注的布尔掩码：`~mask`。",
    },
    "double_scale": {
        "en": "scaled_dot_product_attention divides the scores by "
        "`head_dim ** 0.5` itself: do not scale the queries (or pass "
        "`scale=`) on top of it.",
        "zh": "scaled_dot_product_attention 自己会把分数除以 "
        "`head_dim ** 0.5`：不要再对查询做一次缩放（也不要另外传 `scale=`）。",
    },
    "no_causal": {
        "en": "the attention must stay causal: without padding pass "
        "`is_causal=True`; with padding add the causal mask to the padding "
        "one, `causal | padding`, and pass that as the attn_mask.",
        "zh": "注意力必须保持因果：没有填充时传入 `is_causal=True`；有填充时把因果掩码"
        "和填充掩码合并成 `causal | padding`，再作为 attn_mask 传入。",
    },
}


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
            # At least one real key per sequence, so that no row is empty.
            lens = torch.randint(1, n + 1, (b,), generator=g)
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
        small_q = q / head_dim**0.5
        wrong = {
            "polarity": sdpa(q, mask),
            "float_keep": sdpa(q, (~mask).float()),
            "float_masked": sdpa(q, mask.float()),
            "double_scale": sdpa(small_q, ~mask),
            "no_causal": sdpa(
                q, None if padding is None else ~padding[:, None, None, :]
            ),
        }
        args = (q.clone(), k.clone(), v.clone(), padding)
        out = call(answer, *args, wrong=wrong)
        expect(out, expected, "context", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "context", "shape": "(batch, num_heads, n, head_dim)"}
    values = values_on("lib_masked")
    return [("shape", shape), ("values", values), ("both_cases", {})]


EXERCISES = [
    Exercise("exercise-causal-sdpa", _causal_sdpa, WORDS),
    Exercise("exercise-sdpa-float-mask-bug", _causal_sdpa, WORDS),
]
