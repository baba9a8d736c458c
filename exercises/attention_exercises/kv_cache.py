"""The exercises of the KV cache chapter: one cached attention step, checked
step by step against the library's forward over the whole sequence."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from attention_lib.heads import split_heads
from attention_lib.kv_cache import append_to_cache
from attention_lib.masks import causal_mask, masked_softmax
from attention_lib.multihead import MultiHeadAttention
from attention_lib.rope import RoPEAttention

from ._core import (
    MASKING,
    Exercise,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    hinted,
    seed_weights,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("kv_cache")


Make = Callable[[], torch.Tensor]


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
) -> torch.Tensor:
    # (b, h, t, head_dim) @ (b, h, head_dim, num_keys) -> (b, h, t, num_keys)
    scores = q @ k.transpose(2, 3) / scale
    return masked_softmax(scores, mask) @ v


def _hide_self(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    out: object,
) -> torch.Tensor:
    """Attention with the diagonal hidden, as the reader's ``out`` gives a
    row with every key hidden: nan (masked_fill and softmax) or zeros."""
    scores = (q @ k.transpose(2, 3) / scale).masked_fill(mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    if isinstance(out, torch.Tensor) and not torch.isnan(out).any():
        weights = weights.nan_to_num(0.0)
    return weights @ v


def _filled(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    hidden: torch.Tensor,
    scale: float,
    fill: float | None,
) -> torch.Tensor:
    """A mask that hides nothing: the hidden scores replaced by ``fill``,
    or with ``fill=None`` a float mask of ones and zeros added to them
    (as `F.scaled_dot_product_attention` does), 1 where a key is kept."""
    scores = q @ k.transpose(2, 3) / scale
    scores = (
        scores + (~hidden).to(scores.dtype)
        if fill is None
        else scores.masked_fill(hidden, fill)
    )
    return torch.softmax(scores, dim=-1) @ v


def _other_dim(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    hidden: torch.Tensor,
    scale: float,
    dim: int,
) -> torch.Tensor:
    """The softmax over ``dim`` of the masked scores instead of the keys'."""
    scores = (q @ k.transpose(2, 3) / scale).masked_fill(hidden, -torch.inf)
    return torch.softmax(scores, dim=dim) @ v


def _transposed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    hidden: torch.Tensor,
    scale: float,
    flip: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """The keys turned by ``flip``, `.T` or `transpose(1, 2)`, instead of
    `transpose(2, 3)`: mostly an error, which the reader's code raises too."""
    with warnings.catch_warnings():  # .T on 4 dimensions is deprecated
        warnings.simplefilter("ignore")
        scores = q @ flip(k)
    scores = scores.masked_fill(hidden, -torch.inf) / scale
    return torch.softmax(scores, dim=-1) @ v


def _scales(q: torch.Tensor, *counts: int) -> list[float]:
    """Square roots of sizes that are not one key's: the ``counts`` (of
    keys, which grows with the cache, of slots, of new tokens), d_out and
    the number of heads."""
    num_heads, head_dim = q.shape[1], q.shape[-1]
    sizes = (*counts, num_heads * head_dim, num_heads)
    return [size**0.5 for size in sizes]


def _step(
    answer: Any,
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    full: torch.Tensor,
    start: int,
    end: int,
) -> None:
    """One call of the reader's step: the tokens start..end, with the
    tokens before start already in the cache."""
    q, k, v = qkv
    head_dim = q.shape[-1]
    new = (q[:, :, start:end], k[:, :, start:end], v[:, :, start:end])
    past_k, past_v = k[:, :, :start], v[:, :, :start]
    keys, values = k[:, :, :end], v[:, :, :end]
    ones = torch.ones(end - start, end, dtype=torch.bool)
    right = torch.triu(ones, diagonal=1 + start)  # bottom-right aligned
    root = head_dim**0.5
    next_too = torch.triu(ones, diagonal=2 + start)  # one key too many
    hides_self = torch.triu(ones, diagonal=start)  # the diagonal too
    query, attend = new[0], functools.partial(_attend, new[0], keys, values)
    # Errors the reader's code may raise: the cache read before anything is
    # in it, concatenated on the heads, the keys turned the wrong way.
    raising: dict[str, list[Make]] = {}
    if start == 0:  # an empty cache: the reader's code must not concatenate
        raising["empty"] = [
            lambda: torch.cat([None, new[1]], dim=2)  # type: ignore[list-item]
        ]
    else:
        raising["cat_dim"] = [lambda: torch.cat([past_k, new[1]], dim=1)]
    raising["dot_T"] = [
        functools.partial(_transposed, query, keys, values, right, root, flip)
        for flip in (lambda t: t.transpose(1, 2), lambda t: t.T)
    ]
    # The cache as a right answer left it after the step before.
    cache = SimpleNamespace(
        cache_k=past_k if start else None, cache_v=past_v if start else None
    )
    with torch.no_grad():
        out = call(answer, cache, *new, wrong=variants(raising))
    # The wrong masks that hide every key of a row (the diagonal hidden: the
    # prompt's first query sees no key) give nan through masked_fill and
    # softmax, zeros through SDPA: as the reader's ``out``.
    hiding = functools.partial(_hide_self, query, keys, values)
    ways: dict[str, list[Make]] = {
        "causal_upper_left": [lambda: attend(ones.triu(1), root)],
        "no_mask": [lambda: attend(None, root)],
        "causal_diagonal": [
            lambda: attend(next_too, root),
            lambda: hiding(hides_self, root, out),
        ],
        "scale_missing": [lambda: attend(right, 1.0)],
        "scale_by_d_k": [lambda: attend(right, head_dim)],
        "scale_wrong_size": [
            functools.partial(attend, right, scale)
            for scale in _scales(query, end, end - start)
        ],
        "softmax_dim": [
            functools.partial(
                _other_dim, query, keys, values, right, root, dim
            )
            for dim in (2, 1, 0)
        ],
        "mask_polarity": [lambda: hiding(~right, root, out)],
        # The future's scores filled with 0: attention written out.
        "mask_fill_zero": [
            functools.partial(_filled, query, keys, values, right, root, 0.0)
        ],
        # Ones and zeros (or 0 and -1) as SDPA's attn_mask, added to the
        # scores: not a fill value, a mistake of its own.
        "float_keep": [
            functools.partial(_filled, query, keys, values, right, root, None)
        ],
        **raising,
    }
    expect(out, full[:, :, start:end], "context", variants(ways))
    for name, past, whole in (
        ("cache_k", past_k, keys),
        ("cache_v", past_v, values),
    ):
        now = whole[:, :, start:]
        expect_stored(getattr(cache, name), whole, name, stale(past, now))


def stale(past: torch.Tensor, now: torch.Tensor) -> dict[str, Make]:
    """A cache stored wrong after a step, each under its hint: the new
    tokens before the cached ones, only the new ones, or nothing new."""
    return {
        "new_first": lambda: torch.cat([now, past], dim=2),
        "store_new": lambda: now,
        "no_store": lambda: past,
    }


def expect_stored(
    stored: object, whole: torch.Tensor, name: str, ways: dict[str, Make]
) -> None:
    """The cache's tensor ``name`` after a step must be ``whole``, the
    cached tokens then the new ones; ``ways`` are its wrong answers."""
    if not isinstance(stored, torch.Tensor):
        raise WrongAnswerError(
            "shape",
            "no_store",
            what=name,
            got=stored,
            expected=tuple(whole.shape),
        )
    expect(stored, whole, name, ways)


def _cached_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        b, num_heads, head_dim = 1 + seed % 2, 1 + seed % 3, 2 + seed % 3
        n, d_out = 5 + seed % 5, num_heads * head_dim
        seed_weights(seed)
        mha = MultiHeadAttention(d_out, d_out, n, 0.0, num_heads)
        x = torch.randn(b, n, d_out)
        qkv, full = _projections(mha, x)
        for start, end in pieces(seed, n):
            _step(answer, qkv, full, start, end)

    each_seed(once)
    values = values_on("lib_forward")
    return [("values", values), ("steps", {}), ("cache_after", {})]


_BUFFERS = ("keys", "values", "position")


def _given(result: torch.Tensor) -> Callable[[], torch.Tensor]:
    return lambda: result


def _moved(
    cache: SimpleNamespace, recorded: list[tuple[torch.Tensor, int]]
) -> str:
    """The first of the cache's tensors that is no longer the object, or no
    longer holds the memory, that a graph recorded ('' if none)."""
    for name, (tensor, pointer) in zip(_BUFFERS, recorded, strict=True):
        now: torch.Tensor = getattr(cache, name)
        if now is not tensor or now.data_ptr() != pointer:
            return f"cache.{name}"
    return ""


def _static_step(
    answer: Any,
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    full: torch.Tensor,
    cache: SimpleNamespace,
    start: int,
    end: int,
) -> None:
    """One call of the reader's step on a cache allocated once: the tokens
    start..end, with slots 0..start - 1 filled and the later slots holding
    whatever an earlier sequence left there."""
    q, k, v = qkv
    head_dim = q.shape[-1]
    new = (q[:, :, start:end], k[:, :, start:end], v[:, :, start:end])
    t = end - start
    # The buffers as a right answer leaves them after this step.
    old_keys, old_values = cache.keys.clone(), cache.values.clone()
    keys, values = old_keys.clone(), old_values.clone()
    keys[:, :, start:end], values[:, :, start:end] = new[1], new[2]
    slots = torch.arange(keys.shape[2])
    mine = torch.arange(start, end)[:, None]  # (t, 1): each query's position
    root = head_dim**0.5
    right = slots > mine  # (t, max_tokens)

    def attend(mask: torch.Tensor | None, scale: float = root) -> torch.Tensor:
        return _attend(new[0], keys, values, mask, scale)

    recorded = [
        (getattr(cache, n), getattr(cache, n).data_ptr()) for n in _BUFFERS
    ]
    with torch.no_grad():
        out = call(answer, cache, *new)
    moved = _moved(cache, recorded)
    if moved:
        raise WrongAnswerError("replaced", "in_place", name=moved)
    # Where the new tokens went, before what attention made of them.
    for what, buffer, whole, old, mine_new, other in (
        ("cache_k", cache.keys, keys, old_keys, new[1], new[2]),
        ("cache_v", cache.values, values, old_values, new[2], new[1]),
    ):
        at_zero, shifted = old.clone(), old.clone()
        at_zero[:, :, :t] = mine_new
        if end + t <= old.shape[2]:
            shifted[:, :, end : end + t] = mine_new
        swapped = old.clone()
        swapped[:, :, start:end] = other
        # Added to the slots instead of written over them.
        added = whole + old * ((slots >= start) & (slots < end))[:, None]
        buffers = {
            "slot_zero": _given(at_zero),
            "advanced_first": _given(shifted),
            "swapped": _given(swapped),
            "no_write": _given(old),
            "added": _given(added),
        }
        with hinted("slot_written", unless_named=True):
            expect(buffer, whole, what, buffers)
    # A wrong mask that hides every slot of a row, as the reader's ``out``
    # gives it (nan or zeros), unless all of ``out`` is nan.
    telling = functools.partial(_telling, new[0], keys, values)
    ways: dict[str, list[Make]] = {
        "chunk_mask": [lambda: attend(slots >= end)],
        "empty_slots": [lambda: attend(None)],
        # Each new token's future hidden among the filled slots only, the
        # empty slots after them left visible.
        "empty_visible": [lambda: attend((slots > mine) & (slots < end))],
        "causal_upper_left": [lambda: attend(slots > mine - start)],
        "causal_diagonal": [
            lambda: attend(slots > mine + 1),
            lambda: telling(slots >= mine, root, out),
        ],
        "after_advance": [lambda: attend(slots > mine + t - 1)],
        "scale_by_d_k": [lambda: attend(right, head_dim)],
        "static_no_scale": [lambda: attend(right, 1.0)],
        "scale_wrong_size": [
            functools.partial(attend, right, scale)
            for scale in _scales(new[0], keys.shape[2], end, t)
        ],
        # The hidden slots' scores filled with 0: attention written out.
        "mask_fill_zero": [
            functools.partial(_filled, new[0], keys, values, right, root, 0.0)
        ],
        # Ones and zeros (or 0 and -1) as SDPA's attn_mask, added to the
        # scores: not a fill value, a mistake of its own.
        "float_keep": [
            functools.partial(_filled, new[0], keys, values, right, root, None)
        ],
        "before_advance": [lambda: telling(slots >= start, root, out)],
        "mask_polarity": [lambda: telling(~right, root, out)],
    }
    expect(out, full[:, :, start:end], "context", variants(ways))
    if not torch.equal(cache.position, torch.tensor(end)):
        raise WrongAnswerError(
            "position",
            "position_value",
            got=cache.position.tolist(),
            expected=end,
        )


def _telling(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    hidden: torch.Tensor,
    scale: float,
    out: object,
) -> torch.Tensor:
    """A wrong mask's result, unless it is nan everywhere: an answer that is
    all nan too may be any of several mistakes."""
    result = _hide_self(q, k, v, hidden, scale, out)
    return torch.full_like(result, 1e30) if result.isnan().all() else result


def pieces(seed: int, n: int) -> list[tuple[int, int]]:
    """(start, end) of each step of a cached generation of ``n`` tokens: a
    prompt of at least 3 tokens (with 2, a mask one key too far hides
    nothing and looks like no mask), one new token, then pieces of 1 to 3."""
    ends = [3 + seed % (n - 4)]
    ends.append(ends[0] + 1)
    while ends[-1] < n:
        ends.append(min(n, ends[-1] + 1 + (seed + len(ends)) % 3))
    return list(zip([0, *ends[:-1]], ends, strict=True))


def _projections(
    mha: MultiHeadAttention | RoPEAttention, x: torch.Tensor
) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    """q, k, v of ``x`` by heads, before any rotation, and the library's
    context vectors (of a module with W_query, W_key, W_value, out_proj and
    num_heads: MultiHeadAttention, RoPEAttention), taken before out_proj
    mixes them."""
    captured: list[torch.Tensor] = []
    hook = mha.out_proj.register_forward_pre_hook(
        lambda module, args: captured.append(args[0])
    )
    with torch.no_grad():
        mha(x)
        # (b, n, d_out) -> (b, num_heads, n, head_dim), for q, k and v
        q, k, v = (
            split_heads(layer(x), mha.num_heads)
            for layer in (mha.W_query, mha.W_key, mha.W_value)
        )
    hook.remove()
    # (b, n, d_out) -> (b, num_heads, n, head_dim)
    return (q, k, v), split_heads(captured[0], mha.num_heads)


def _static_cached_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        b, num_heads, head_dim = 1 + seed % 2, 1 + seed % 3, 2 + seed % 3
        n, d_out = 5 + seed % 5, num_heads * head_dim
        seed_weights(seed)
        mha = MultiHeadAttention(d_out, d_out, n, 0.0, num_heads)
        # Room for 1 to 3 more tokens than a sequence: empty slots remain.
        shape = (b, num_heads, n + 1 + seed % 3, head_dim)
        cache = SimpleNamespace(
            keys=torch.zeros(shape),
            values=torch.zeros(shape),
            position=torch.tensor(0),
        )
        steps = pieces(seed, n)
        # Two sequences through one cache, as after StaticKVCache.reset():
        # the second finds the first one's keys and values in its slots.
        for sequence in range(2):
            x = torch.randn(b, n if sequence == 0 else steps[-1][0], d_out)
            qkv, full = _projections(mha, x)
            for start, end in steps:
                if end <= x.shape[1]:
                    _static_step(answer, qkv, full, cache, start, end)
            cache.position.zero_()

    # The cache's tensors are the task's to overwrite: a step's keys, read
    # from them, change when the next sequence fills the slots.
    each_seed(once, kept=False)
    values = values_on("lib_forward")
    return [("values", values), ("steps", {}), ("static_after", {})]


#: The mistakes of an answer that calls SDPA, which scales, multiplies and
#: takes the softmax itself: its mask, and a scale passed to it. An answer
#: that computes the attention itself can make the others too.
_SDPA_MISTAKES = MASKING | {
    "causal_upper_left",
    "scale_by_d_k",
    "scale_wrong_size",
}

EXERCISES = [
    Exercise(
        "exercise-cached-attention",
        _cached_attention,
        WORDS,
        # The task: the two steps written out, not the library's.
        Rules(
            functions={
                "append_to_cache": append_to_cache,
                "causal_mask": causal_mask,
            }
        ),
        reference="lib_forward",
        mistakes=_SDPA_MISTAKES | {"scale_missing", "softmax_dim", "dot_T"},
    ),
    Exercise(
        "exercise-cache-is-causal-bug",
        _cached_attention,
        WORDS,
        reference="lib_forward",
        # The fix changes only SDPA's mask, which takes no fill value: its
        # nearest, a float mask of ones and zeros, is `float_keep`.
        mistakes=_SDPA_MISTAKES - {"mask_fill_zero"},
    ),
    Exercise(
        "exercise-static-cache-bug",
        _static_cached_attention,
        WORDS,
        Rules(graph_safe=True),
        reference="lib_forward",
        # Learners write this step's attention out too (masked_fill, or the
        # scores times the visible slots): a fill of 0 can happen here.
        mistakes=_SDPA_MISTAKES,
    ),
]
