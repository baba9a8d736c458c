"""The exercises of the positions chapter: RoPE written as a complex
multiplication, and a cached step of RoPE attention whose new tokens must be
rotated at their positions in the whole sequence."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import torch
from attention_lib.rope import (
    RoPEAttention,
    apply_rope,
    interleaved_to_half,
    rope_cos_sin,
)

from ._core import (
    Exercise,
    Flow,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    gradients_flow,
    seed_weights,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules
from .kv_cache import (
    _SDPA_MISTAKES,
    Make,
    _attend,
    _filled,
    _hide_self,
    _projections,
    _scales,
    expect_stored,
    pieces,
    stale,
)

#: The chapter's own words, and the KV cache chapter's hints about storing
#: the cache, which a cached step of RoPE attention can get wrong the same way.
WORDS: Messages = {**messages("kv_cache"), **messages("positions")}


BASE = 10000.0


def _rotated(
    x: torch.Tensor, positions: torch.Tensor, freqs: torch.Tensor
) -> torch.Tensor:
    """The interleaved layout's rotation with the angles ``positions *
    freqs``, whatever they are: the right ones, or a mistake's."""
    # (t, 1) * (head_dim // 2,) -> (t, head_dim // 2)
    angles = positions.to(x.dtype)[:, None] * freqs.to(x.dtype)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    # (..., head_dim // 2, 2) -> (..., head_dim)
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(
        -2
    )


def _complex_ways(
    x: torch.Tensor, positions: torch.Tensor
) -> dict[str, list[Make]]:
    """The typical wrong answers of RoPE as a complex multiplication."""
    head_dim, t = x.shape[-1], x.shape[-2]
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    perm = interleaved_to_half(head_dim)
    half = functools.partial(apply_rope, x, positions, "half")
    return {
        # Pairs (i, i + head_dim / 2), put back where they came from or
        # written out as neighbours.
        "half_pairs": [half, lambda: half()[..., perm.argsort()]],
        # base ** (-i / head_dim), base ** (-i / (head_dim / 2)) shifted
        # by one, base ** (+2i / head_dim), base ** (-2i) alone, and
        # base ** (-2i / head_dim) for i = 1 .. head_dim / 2.
        "frequencies": [
            lambda: _rotated(x, positions, BASE ** (-i / head_dim)),
            lambda: _rotated(x, positions, BASE ** (2 * i / head_dim)),
            lambda: _rotated(x, positions, BASE ** (-(i + 1) / head_dim)),
            lambda: _rotated(x, positions, BASE ** (-2 * i)),
            lambda: _rotated(x, positions, BASE ** (-2 * (i + 1) / head_dim)),
        ],
        "given_positions": [
            lambda: apply_rope(x, torch.arange(t), "interleaved"),
            lambda: apply_rope(x, torch.arange(1, t + 1), "interleaved"),
        ],
        "direction": [lambda: apply_rope(x, -positions, "interleaved")],
        "flatten": [
            lambda: apply_rope(x, positions, "interleaved").unflatten(
                -1, (head_dim // 2, 2)
            )
        ],
    }


def _rope_complex(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Flow:
        gen = torch.Generator().manual_seed(seed)
        # head_dim of 2 has one pair, where the two layouts are one: the
        # first inputs have more.
        b, num_heads = 1 + seed % 2, 1 + seed % 3
        head_dim = (4, 6, 8, 2)[seed % 4]
        t = 1 + (seed + 2) % 5
        # The positions of a cached step: from the number of cached tokens
        # on, now and then from 0 (a prompt).
        start = 0 if seed % 5 == 3 else 1 + (seed * 7) % 40
        positions = torch.arange(start, start + t)
        x = torch.randn(b, num_heads, t, head_dim, generator=gen)
        x.requires_grad_()
        with torch.no_grad():
            expected = apply_rope(x, positions, "interleaved")
        out = call(answer, x, positions.clone())
        if isinstance(out, torch.Tensor) and out.is_complex():
            raise WrongAnswerError(
                "dtype",
                "to_real",
                what="rotated",
                got=str(out.dtype).removeprefix("torch."),
                expected="float32",
            )
        ways = _complex_ways(x.detach(), positions)
        expect(out, expected, "rotated", variants(ways))

        def right(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
            return apply_rope(inputs["x"], positions, "interleaved")

        return out, {"x": x}, "rotated", right

    # Values first for every seed, then the gradients.
    for flow in each_seed(once):
        gradients_flow(*flow)
    shape = {
        "what": "rotated",
        "shape": "(b, num_heads, num_tokens, head_dim)",
    }
    values = values_on("lib_interleaved")
    return [
        ("shape", shape),
        ("values", values),
        ("offsets", {}),
        ("grad_inputs", {"names": "x"}),
    ]


def _rope_step(
    answer: Any,
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    full: torch.Tensor,
    start: int,
    end: int,
) -> None:
    """One call of the reader's step: the tokens start..end, unrotated, with
    the keys of the tokens before start in the cache, rotated at their
    positions (as RoPEAttention keeps them)."""
    q, k, v = qkv
    head_dim, num_new = q.shape[-1], end - start
    # Every token of the sequence at its position, then the first end.
    positions = torch.arange(end)
    q_rot, k_rot = (apply_rope(t, torch.arange(t.shape[2])) for t in (q, k))
    new = (q[:, :, start:end], k[:, :, start:end], v[:, :, start:end])
    keys, values = k_rot[:, :, :end], v[:, :, :end]
    past_k, past_v = k_rot[:, :, :start], v[:, :, :start]
    cache = SimpleNamespace(
        cache_k=past_k if start else None, cache_v=past_v if start else None
    )
    with torch.no_grad():
        out = call(answer, cache, *new)
    ones = torch.ones(num_new, end, dtype=torch.bool)
    right = torch.triu(ones, diagonal=1 + start)  # bottom-right aligned
    root = head_dim**0.5
    query = q_rot[:, :, start:end]

    def attend(
        queries: torch.Tensor = query,
        all_keys: torch.Tensor = keys,
        mask: torch.Tensor | None = right,
        scale: float = root,
    ) -> torch.Tensor:
        return _attend(queries, all_keys, values, mask, scale)

    # The new tokens rotated as if they were the first ones (positions from
    # 0, or from 1); and the keys rotated where they do not belong.
    restart = torch.arange(num_new)
    from_zero = (apply_rope(new[0], restart), apply_rope(new[1], restart))
    from_one = (
        apply_rope(new[0], restart + 1),
        apply_rope(new[1], restart + 1),
    )
    cat = functools.partial(torch.cat, dim=2)
    # The new tokens one position off, later or earlier: right distances
    # among themselves, wrong ones to the cached keys, and cached wrong.
    shifted = [
        (apply_rope(new[0], step), apply_rope(new[1], step))
        for step in (positions[start:] + 1, positions[start:] - 1)
    ]
    # The whole cache, new keys and cached ones, rotated at 0..end - 1 after
    # appending: the cached keys turn twice (the new ones once, or twice).
    again = apply_rope(cat([past_k, new[1]]), positions)
    twice = apply_rope(keys, positions)
    hiding = functools.partial(_hide_self, query, keys, values)
    ways: dict[str, list[Make]] = {
        "restart": [
            lambda: attend(from_zero[0], cat([past_k, from_zero[1]])),
            lambda: attend(from_one[0], cat([past_k, from_one[1]])),
        ],
        "off_by_one": [
            lambda: attend(shifted[0][0], cat([past_k, shifted[0][1]])),
            lambda: attend(shifted[1][0], cat([past_k, shifted[1][1]])),
        ],
        "rotate_twice": [
            lambda: attend(all_keys=again),
            lambda: attend(all_keys=twice),
        ],
        "rotate_both": [
            lambda: attend(queries=new[0]),
            lambda: attend(all_keys=cat([past_k, new[1]])),
            lambda: attend(new[0], cat([past_k, new[1]])),
        ],
        "layout": [
            lambda: attend(
                apply_rope(new[0], positions[start:], "interleaved"),
                cat(
                    [
                        past_k,
                        apply_rope(new[1], positions[start:], "interleaved"),
                    ]
                ),
            )
        ],
        "causal_upper_left": [lambda: attend(mask=ones.triu(1))],
        "no_mask": [lambda: attend(mask=None)],
        "causal_diagonal": [
            lambda: attend(mask=torch.triu(ones, diagonal=2 + start)),
            lambda: hiding(torch.triu(ones, diagonal=start), root, out),
        ],
        "scale_by_d_k": [lambda: attend(scale=head_dim)],
        "scale_wrong_size": [
            functools.partial(attend, scale=scale)
            for scale in _scales(query, end, num_new)
        ],
        "mask_polarity": [lambda: hiding(~right, root, out)],
        # The future's scores filled with 0, were the attention written out:
        # not a mistake of this fix (mistakes= below), tried so that it is
        # not taken for another.
        "mask_fill_zero": [
            functools.partial(_filled, query, keys, values, right, root, 0.0)
        ],
        # Ones and zeros (or 0 and -1) as SDPA's attn_mask, added to the
        # scores: not a fill value, a mistake of its own.
        "float_keep": [
            functools.partial(_filled, query, keys, values, right, root, None)
        ],
    }
    expect(out, full[:, :, start:end], "context", variants(ways))
    for name, past, whole, raw, off in (
        ("cache_k", past_k, keys, cat([past_k, new[1]]), shifted),
        ("cache_v", past_v, values, values, []),
    ):
        stored_ways: dict[str, Make] = {
            "cache_unrotated": lambda: raw,  # noqa: B023
            **stale(past, whole[:, :, start:]),
            **{
                f"off_by_one:{number}": functools.partial(
                    cat, [past, keys_off]
                )
                for number, (_, keys_off) in enumerate(off)
            },
        }
        try:
            expect_stored(getattr(cache, name), whole, name, stored_ways)
        except WrongAnswerError as failure:
            # Compared with the cache as it should be, not the forward.
            failure.fields["reference"] = f"lib_{name}"
            raise


def _rope_cached_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        b, num_heads, head_dim = (
            1 + seed % 2,
            1 + seed % 3,
            (2, 4, 6)[seed % 3],
        )
        n, d_out = 5 + seed % 5, num_heads * head_dim
        seed_weights(seed)
        module = RoPEAttention(d_out, d_out, 0.0, num_heads)
        # Large enough for the weights to be far from uniform: a key at the
        # wrong angle then changes them visibly.
        x = 4 * torch.randn(b, n, d_out)
        qkv, full = _projections(module, x)
        for start, end in pieces(seed, n):
            _rope_step(answer, qkv, full, start, end)

    each_seed(once)
    values = values_on("lib_rope_forward")
    return [("values", values), ("steps", {}), ("rotated_cache", {})]


EXERCISES = [
    Exercise(
        "exercise-rope-complex",
        _rope_complex,
        WORDS,
        # The task: the rotation as one complex multiplication, with no
        # cosine or sine of the library's or torch's.
        Rules(
            functions={"apply_rope": apply_rope, "rope_cos_sin": rope_cos_sin},
            torch_functions=frozenset({"cos", "sin"}),
        ),
        reference="lib_interleaved",
    ),
    Exercise(
        "exercise-rope-cache-bug",
        _rope_cached_attention,
        WORDS,
        reference="lib_rope_forward",
        # The fix changes only the positions, and SDPA takes the mask, with
        # no fill value: its nearest, a float mask of ones and zeros, is
        # `float_keep`.
        mistakes=_SDPA_MISTAKES - {"mask_fill_zero"},
    ),
]
