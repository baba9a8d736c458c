"""Positions: where new tokens sit under a KV cache, and rotary position embeddings (RoPE).

Attention sees a set of vectors; positions are what tell it the order. Two ways to add them:

* learned absolute embeddings (as in
  [`PreviousTokens`][attention_lib.previous_tokens.PreviousTokens]): a vector per position, added to each
  token's embedding;
* RoPE (Su et al., 2021, *RoFormer*): each query and key is rotated, pair of dimensions by pair of
  dimensions, by an angle proportional to its position, so that the score ``q_m · k_n`` depends on the
  positions ``m`` and ``n`` only through ``m - n``.

Both take *absolute* positions. With a KV cache, the tokens of a step come after the cached ones: their
positions start at the number of cached tokens
([`positions_for_step`][attention_lib.rope.positions_for_step]), not at 0 again. With RoPE, queries and
keys are rotated at those positions *before* the keys are cached, so a cached key is never rotated again.

RoPE comes in two layouts, which pair the dimensions of a head differently:

* ``"half"``, pairs ``(i, i + head_dim / 2)``: Hugging Face's Llama (``rotate_half``), GPT-NeoX, the
  book's Llama 3 and Qwen3 code;
* ``"interleaved"``, pairs ``(2i, 2i + 1)``: the RoFormer paper, GPT-J, Meta's reference Llama code.

Pair ``i`` turns by ``position * base ** (-2i / head_dim)`` radians in both. The two are the same
rotation up to a permutation of each head's dimensions
([`interleaved_to_half`][attention_lib.rope.interleaved_to_half]): weights trained with one layout
give other outputs under the other, until the rows of ``W_query`` and ``W_key`` are permuted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_cache_input,
    check_divisible,
    check_dropout,
    check_mask,
    check_positive_int,
    check_tensor,
)
from .heads import merge_heads, split_heads
from .kv_cache import append_to_cache, clear_cache, num_cached
from .masks import causal_mask, to_sdpa_mask

#: The two ways of pairing a head's dimensions (see the module's docstring).
ROPE_LAYOUTS = ("half", "interleaved")


def _check_head_dim(head_dim: object) -> int:
    head_dim = check_positive_int("head_dim", head_dim)
    if head_dim % 2 != 0:
        raise ValueError(
            f"head_dim must be even, got {head_dim}: RoPE rotates pairs of "
            "dimensions (choose d_out and num_heads so that "
            "d_out // num_heads is even)"
        )
    return head_dim


def _check_base(base: object) -> float:
    message = f"base must be a number greater than 1, got {base!r}"
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(message)
    if not 1.0 < base < float("inf"):
        raise ValueError(message)
    return float(base)


def _check_layout(layout: object) -> str:
    if layout not in ROPE_LAYOUTS:
        raise ValueError(
            "layout must be 'half' (pairs i, i + head_dim/2: Hugging Face's "
            "Llama) or 'interleaved' (pairs 2i, 2i + 1: GPT-J), "
            f"got {layout!r}"
        )
    return str(layout)


def _check_positions(
    positions: object,
    num_tokens: int | None = None,
    batch: int | None = None,
    name: str = "positions",
) -> torch.Tensor:
    """Check integer positions, ``(num_tokens,)`` or ``(batch, num_tokens)``.

    ``num_tokens``: the number of tokens they must cover; ``batch``: the
    batch a 2-D one must have (``None``: not allowed to be 2-D).
    """
    if not isinstance(positions, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(positions).__name__}"
        )
    if (
        positions.is_floating_point()
        or positions.is_complex()
        or positions.dtype == torch.bool
    ):
        raise TypeError(
            f"{name} must be an integer tensor (e.g. torch.arange(...), "
            f"torch.int64), got dtype {positions.dtype}"
        )
    if positions.dim() not in (1, 2):
        raise ValueError(
            f"{name} must be a 1-D tensor of shape (num_tokens,) or a 2-D "
            "tensor of shape (batch, num_tokens), got a "
            f"{positions.dim()}-D tensor of shape {tuple(positions.shape)}"
        )
    if num_tokens is not None and positions.shape[-1] != num_tokens:
        raise ValueError(
            f"{name} must hold one position per token ({num_tokens} tokens), "
            f"got shape {tuple(positions.shape)}"
        )
    if (
        num_tokens is not None
        and positions.dim() == 2
        and positions.shape[0] != batch
    ):
        got = "none" if batch is None else batch
        raise ValueError(
            f"{name} of shape (batch, num_tokens) = {tuple(positions.shape)} "
            f"needs x of shape (batch, ..., num_tokens, head_dim) with the "
            f"same batch size, got x with batch size {got}"
        )
    return positions


# --8<-- [start:positions_for_step]
def positions_for_step(
    num_cached: int,
    num_tokens: int,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The absolute positions of ``num_tokens`` new tokens that follow ``num_cached`` cached ones.

    Args:
        num_cached: how many tokens the KV cache already holds (0 for the
            prompt).
        num_tokens: how many tokens this step adds.
        device: where to create the positions.

    Returns:
        ``torch.arange(num_cached, num_cached + num_tokens)``, int64, shape
        ``(num_tokens,)``. ``torch.arange(num_tokens)`` would be the positions
        of the *first* tokens again: right for the prompt, wrong for every
        later step.
    """
    if isinstance(num_cached, bool) or not isinstance(num_cached, int):
        raise TypeError(
            f"num_cached must be a non-negative integer, got {num_cached!r}"
        )
    if num_cached < 0:
        raise ValueError(
            f"num_cached must be a non-negative integer, got {num_cached!r}"
        )
    check_positive_int("num_tokens", num_tokens)
    # The cached tokens sit at 0 .. num_cached - 1; the new ones follow.
    return torch.arange(num_cached, num_cached + num_tokens, device=device)


# --8<-- [end:positions_for_step]


# --8<-- [start:rope_cos_sin]
def rope_frequencies(
    head_dim: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The angle per position of each of the ``head_dim / 2`` pairs: ``base ** (-2i / head_dim)``.

    Args:
        head_dim: size of each head; must be even.
        base: the RoPE base (``rope_theta`` in Hugging Face's configs).
        dtype: floating-point dtype of the result.

    Returns:
        Tensor of shape ``(head_dim // 2,)``, from 1 (pair 0 turns one radian
        per position) down to ``base ** (-(head_dim - 2) / head_dim)``.
    """
    head_dim = _check_head_dim(head_dim)
    base = _check_base(base)
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype}")
    # 2i / head_dim for i = 0 .. head_dim/2 - 1: (head_dim // 2,)
    exponents = torch.arange(0, head_dim, 2, dtype=dtype) / head_dim
    # Fast-turning pairs see nearby positions, slow ones far-apart positions.
    return 1.0 / torch.pow(base, exponents)


def rope_cos_sin(
    head_dim: int,
    positions: torch.Tensor,
    base: float = 10000.0,
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cosines and sines of the angles by which RoPE turns each pair at each position.

    Args:
        head_dim: size of each head; must be even.
        positions: integer positions, ``(num_tokens,)`` or ``(batch,
            num_tokens)``.
        base: the RoPE base.
        dtype: floating-point dtype of the tables (float32 by default, as
            the angles of far positions need its precision at least).

    Returns:
        ``(cos, sin)``, each of shape ``(*positions.shape, head_dim // 2)``
        (one column per pair, on ``positions``' device).
    """
    positions = _check_positions(positions)
    freqs = rope_frequencies(head_dim, base, dtype=dtype)
    # (..., t, 1) * (head_dim // 2,) -> (..., t, head_dim // 2)
    angles = positions.to(dtype)[..., None] * freqs.to(positions.device)
    return angles.cos(), angles.sin()


# --8<-- [end:rope_cos_sin]


# --8<-- [start:apply_rope]
def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor,
    layout: str = "half",
    base: float = 10000.0,
) -> torch.Tensor:
    """Rotate each pair of dimensions of ``x`` by its angle at each token's position.

    Pair ``(x1, x2)`` at position ``p`` becomes ``(x1 cos a - x2 sin a, x1
    sin a + x2 cos a)`` with ``a = p * base ** (-2i / head_dim)`` for pair
    ``i``: a rotation, so norms are kept and position 0 changes nothing.

    Args:
        x: queries or keys, ``(..., num_tokens, head_dim)``, e.g. ``(batch,
            num_heads, num_tokens, head_dim)``; ``head_dim`` must be even.
        positions: their absolute positions, integers, ``(num_tokens,)`` (the
            same for every sequence) or ``(batch, num_tokens)`` (one row per
            sequence; then ``x`` is ``(batch, ..., num_tokens, head_dim)``).
        layout: ``"half"``, pairs ``(i, i + head_dim / 2)``, Hugging Face's
            ``rotate_half``; or ``"interleaved"``, pairs ``(2i, 2i + 1)``, as
            in GPT-J and Meta's reference Llama.
        base: the RoPE base (``rope_theta``).

    Returns:
        Tensor of ``x``'s shape and dtype, computed in float32 (float64 for
        float64 ``x``).
    """
    check_tensor("x", x, ("num_tokens", "head_dim"), any_leading=True)
    layout = _check_layout(layout)
    num_tokens, head_dim = x.shape[-2:]
    _check_head_dim(head_dim)
    # A 2-D x has no batch dimension for (batch, num_tokens) positions.
    batch = x.shape[0] if x.dim() >= 3 else None
    positions = _check_positions(positions, num_tokens, batch)
    # Half precision would lose the angles of far positions.
    dtype = torch.promote_types(x.dtype, torch.float32)
    # (num_tokens, head_dim // 2), or (batch, num_tokens, head_dim // 2)
    cos, sin = rope_cos_sin(
        head_dim, positions.to(x.device), base, dtype=dtype
    )
    if positions.dim() == 2:
        # (b, t, head_dim // 2) -> (b, 1, t, head_dim // 2): every head alike
        middle = [1] * (x.dim() - 3)
        cos = cos.view(cos.shape[0], *middle, num_tokens, -1)
        sin = sin.view(sin.shape[0], *middle, num_tokens, -1)
    if layout == "half":
        # First coordinates in the first half, second ones in the second.
        x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2 :]
    else:
        # First coordinates at the even dimensions, second ones at the odd.
        x1, x2 = x[..., 0::2], x[..., 1::2]
    x1, x2 = x1.to(dtype), x2.to(dtype)
    # Each (..., num_tokens, head_dim // 2): the 2-D rotation of every pair
    rotated_1 = x1 * cos - x2 * sin
    rotated_2 = x1 * sin + x2 * cos
    if layout == "half":
        out = torch.cat((rotated_1, rotated_2), dim=-1)
    else:
        # (..., head_dim // 2, 2) -> (..., head_dim): back to 2i, 2i + 1
        out = torch.stack((rotated_1, rotated_2), dim=-1).flatten(-2)
    return out.to(x.dtype)


# --8<-- [end:apply_rope]


# --8<-- [start:interleaved_to_half]
def interleaved_to_half(head_dim: int) -> torch.Tensor:
    """The permutation of a head's dimensions that turns the interleaved layout into the half one.

    ``perm = [0, 2, 4, ..., head_dim - 2, 1, 3, ..., head_dim - 1]``:
    ``x[..., perm]`` moves pair ``(2i, 2i + 1)`` to ``(i, i + head_dim / 2)``,
    so that ``apply_rope(x[..., perm], positions, "half")`` equals
    ``apply_rope(x, positions, "interleaved")[..., perm]`` exactly, bit for
    bit. ``perm.argsort()`` is the way back. Since ``q · k`` sums over all
    dimensions, permuting both changes no score: a model trained with one
    layout runs with the other once the rows of each head of ``W_query`` and
    ``W_key`` are permuted, ``W.weight.view(num_heads, head_dim,
    d_in)[:, perm]`` (what Hugging Face's conversion of Meta's Llama weights
    does).

    Args:
        head_dim: size of each head; must be even.

    Returns:
        int64 tensor of shape ``(head_dim,)``.
    """
    head_dim = _check_head_dim(head_dim)
    # Even dimensions (each pair's first coordinate) first, then the odd.
    return torch.cat(
        (torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2))
    )


# --8<-- [end:interleaved_to_half]


# --8<-- [start:RoPEAttention]
class RoPEAttention(nn.Module):
    """Multi-head causal self-attention with rotary position embeddings and a KV cache.

    [`MultiHeadAttention`][attention_lib.multihead.MultiHeadAttention]'s
    projections (created in the same order: ``W_query``, ``W_key``,
    ``W_value``, ``out_proj``), with the queries and keys of each head
    rotated by [`apply_rope`][attention_lib.rope.apply_rope] at the tokens'
    absolute positions. There is no ``context_length``: RoPE has no table of
    positions to run out of, and the causal mask is built for each forward.

    With ``use_cache=True`` the keys (rotated) and values of every token seen
    are kept in ``cache_k`` and ``cache_v`` (non-persistent buffers, ``None``
    when empty; see [`attention_lib.kv_cache`][attention_lib.kv_cache]) and
    the new tokens are taken to follow them: their positions start at the
    number of cached tokens, and the causal mask is aligned bottom-right. A
    prompt and then one token at a time give the outputs of one forward of
    the whole sequence. ``reset_cache()`` empties the cache; loading a state
    dict empties it too.

    ``position_ids`` overrides the positions of the new tokens. Since RoPE
    scores depend only on differences of positions, adding the same number
    to every position of a sequence changes nothing; restarting the
    positions at 0 for a cached step does (the offset bug). With a
    left-padded batch, ``key_padding_mask`` hides the padding; the real
    tokens then get the outputs they get without padding, whatever
    ``position_ids`` they are given, as long as they are consecutive.

    Args:
        d_in: size of each input vector.
        d_out: size of the output; must be divisible by ``num_heads``, and
            ``head_dim = d_out // num_heads`` must be even.
        dropout: dropout probability on the attention weights, in [0, 1).
        num_heads: number of heads.
        qkv_bias: whether ``W_query``, ``W_key`` and ``W_value`` have a bias
            (``out_proj`` always has).
        layout: ``"half"`` or ``"interleaved"``, see
            [`apply_rope`][attention_lib.rope.apply_rope].
        base: the RoPE base (``rope_theta``).

    Shape:
        - Input ``x``: ``(batch, num_tokens, d_in)``; with ``use_cache=True``,
          ``batch`` is the batch the cache was filled with.
        - Input ``position_ids``: integers, ``(num_tokens,)`` or ``(batch,
          num_tokens)``; by default ``num_cached .. num_cached + num_tokens -
          1`` ([`positions_for_step`][attention_lib.rope.positions_for_step]).
        - Input ``key_padding_mask``: ``(batch, num_keys)``, boolean, True =
          padding, with ``num_keys`` the cached tokens (with
          ``use_cache=True``) plus ``num_tokens``: a mask of every key, as
          the cache does not remember which of its tokens were padding.
        - Output: ``(batch, num_tokens, d_out)``. A query that may see only
          padding gets a context vector of zeros (before ``out_proj``).
        - ``cache_k``, ``cache_v``: ``(batch, num_heads, num_cached,
          head_dim)``.
    """

    cache_k: torch.Tensor | None
    cache_v: torch.Tensor | None

    def __init__(
        self,
        d_in: int,
        d_out: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
        *,
        layout: str = "half",
        base: float = 10000.0,
    ) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out = check_positive_int("d_out", d_out)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.head_dim = _check_head_dim(
            check_divisible("d_out", d_out, num_heads)
        )
        self.layout = _check_layout(layout)
        self.base = _check_base(base)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(check_dropout(dropout))
        # The rotated keys and the values of the tokens seen so far, when
        # generating with use_cache=True: state of one generation.
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.register_load_state_dict_post_hook(clear_cache)

    def reset_cache(self) -> None:
        clear_cache(self)

    def forward(
        self,
        x: torch.Tensor,
        use_cache: bool = False,
        *,
        position_ids: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Causal context vectors of ``x``, ``(batch, num_tokens, d_out)``."""
        check_tensor(
            "x",
            x,
            ("batch", "num_tokens", "d_in"),
            last_dim=self.d_in,
            like=self,
        )
        b, num_tokens, _ = x.shape
        if use_cache:
            check_cache_input(self.cache_k, b, num_tokens, None)
        num_past = num_cached(self) if use_cache else 0
        num_keys = num_past + num_tokens
        if position_ids is None:
            # The new tokens follow the cached ones: num_past, num_past + 1..
            position_ids = positions_for_step(num_past, num_tokens, x.device)
        _check_positions(position_ids, num_tokens, b, name="position_ids")
        if key_padding_mask is not None:
            check_mask(
                "key_padding_mask",
                key_padding_mask,
                (b, num_keys),
                exact=True,
            )

        # (b, t, d_out) -> (b, num_heads, t, head_dim)
        queries = split_heads(self.W_query(x), self.num_heads)
        keys = split_heads(self.W_key(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        # Rotate at the absolute positions *before* caching: a cached key
        # keeps its own position's rotation and is never rotated again.
        queries = apply_rope(queries, position_ids, self.layout, self.base)
        keys = apply_rope(keys, position_ids, self.layout, self.base)
        if use_cache:
            # -> (b, num_heads, num_past + t, head_dim)
            keys, values = append_to_cache(self, keys, values)

        # The queries are the last num_tokens of num_keys positions: the
        # causal mask aligned bottom-right. Without padding, the prompt needs
        # none (is_causal), nor does one new token, which sees every key.
        mask, fully_masked = None, None
        if key_padding_mask is not None:
            # (t, num_keys) | (b, 1, 1, num_keys) -> (b, 1, t, num_keys)
            mask = (
                causal_mask(
                    num_tokens, num_keys, device=x.device, align="lower_right"
                )
                | key_padding_mask[:, None, None, :]
            )
            # The queries that see only padding, (b, 1, t, 1).
            fully_masked = mask.all(dim=-1, keepdim=True)
        elif num_past > 0 and num_tokens > 1:
            mask = causal_mask(
                num_tokens, num_keys, device=x.device, align="lower_right"
            )  # (t, num_keys)
        context_vec = F.scaled_dot_product_attention(
            queries,
            keys,
            values,
            attn_mask=None if mask is None else to_sdpa_mask(mask),
            dropout_p=self.dropout.p if self.training else 0.0,
            is_causal=mask is None and num_past == 0,
        )
        if fully_masked is not None:
            # Zeros there, not the nan some backends give.
            context_vec = context_vec.masked_fill(fully_masked, 0.0)

        # (b, h, t, head_dim) -> (b, t, d_out)
        return self.out_proj(merge_heads(context_vec))

    if TYPE_CHECKING:
        # module(x, ...) as typed as module.forward(x, ...).
        __call__ = forward


# --8<-- [end:RoPEAttention]
