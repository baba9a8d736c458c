"""Multi-head causal self-attention: a stack of single heads, then one module with split weights."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_cache_input,
    check_divisible,
    check_dropout,
    check_mask,
    check_num_tokens,
    check_positive_int,
    check_static_cache,
    check_tensor,
)
from .causal import CausalAttention
from .heads import merge_heads, split_heads
from .kv_cache import (
    append_to_cache,
    clear_cache,
    num_cached,
)
from .masks import (
    causal_mask,
    masked_softmax,
    refill_causal_mask,
    to_sdpa_mask,
)
from .static_cache import StaticKVCache


# --8<-- [start:MultiHeadAttentionWrapper]
class MultiHeadAttentionWrapper(nn.Module):
    """A stack of independent [`CausalAttention`][attention_lib.causal.CausalAttention] heads, concatenated.

    Args:
        d_in: size of each input vector.
        d_out: output size of *each* head.
        context_length: the largest number of tokens the module accepts.
        dropout: dropout probability on the attention weights, in [0, 1).
        num_heads: number of heads.
        qkv_bias: whether the projections have a bias.

    Shape:
        - Input ``x``: ``(batch, num_tokens, d_in)``.
        - Output: ``(batch, num_tokens, num_heads * d_out)``.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        check_positive_int("num_heads", num_heads)
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The heads' context vectors side by side, ``(batch, num_tokens, num_heads * d_out)``."""
        return torch.cat([head(x) for head in self.heads], dim=-1)


# --8<-- [end:MultiHeadAttentionWrapper]


# --8<-- [start:MultiHeadAttention]
class MultiHeadAttention(nn.Module):
    """Multi-head causal self-attention: one set of projections, split.

    The projections ``W_query``, ``W_key``, ``W_value`` map ``d_in`` to
    ``d_out``; their outputs are split into ``num_heads`` heads of ``head_dim =
    d_out // num_heads`` ([`split_heads`][attention_lib.heads.split_heads]),
    each head attends on its own, the heads are merged back
    ([`merge_heads`][attention_lib.heads.merge_heads]) and ``out_proj`` mixes
    them. Parameters are created in the book's order (``W_query``, ``W_key``,
    ``W_value``, ``out_proj``), so seeded results equal the book's.

    Two paths compute the attention itself and agree to floating-point
    rounding:

    * the fast path, `torch.nn.functional.scaled_dot_product_attention`.
      Used by default. Without ``key_padding_mask`` it passes ``is_causal``
      and builds no mask, and on backends with a fused kernel it never
      materializes the ``num_tokens x num_tokens`` weights (memory linear in
      the number of tokens). With ``key_padding_mask`` it builds the combined
      boolean mask, ``(batch, 1, num_tokens, num_tokens)``, and passes it as
      ``attn_mask``: memory quadratic in the number of tokens again (one byte
      per entry), and on CUDA the FlashAttention kernel, which takes no mask,
      is ruled out.
    * the explicit path: scores,
      [`masked_softmax`][attention_lib.masks.masked_softmax], dropout, weighted
      sum, exactly as the book writes it. Used when ``need_weights=True`` (it
      returns the weights for plotting) or when the attribute ``use_sdpa`` is
      False.

    The causal mask buffer follows the same choice as
    [`CausalAttention`][attention_lib.causal.CausalAttention]: boolean, moved
    by ``.to(device)``, not in ``state_dict()``.

    With ``use_cache=True`` the module keeps the keys and values of every
    token it has seen in the buffers ``cache_k`` and ``cache_v``
    (``persistent=False``, ``None`` when empty; see
    [`attention_lib.kv_cache`][attention_lib.kv_cache]), and the queries of
    ``x`` are taken to follow those tokens: a prompt (prefill) and then one
    token at a time (decoding) give the outputs that one forward of the whole
    sequence gives. The causal mask is then aligned bottom-right (rows
    ``num_cached .. num_cached + num_tokens`` of the buffer), on both paths.
    ``reset_cache()`` empties the cache before a new sequence; loading a state
    dict and ``reset_parameters()`` empty it too. ``use_cache`` and
    ``key_padding_mask`` do not go together.

    With ``cache=`` a
    [`StaticKVCache`][attention_lib.static_cache.StaticKVCache] (allocated
    once, written in place, for CUDA graphs) holds the keys and values instead,
    and the module's own cache is left alone; it does not go with
    ``use_cache=True`` or ``key_padding_mask`` either.

    Args:
        d_in: size of each input vector.
        d_out: size of the output; must be divisible by ``num_heads``.
        context_length: the largest number of tokens the module accepts.
        dropout: dropout probability on the attention weights, in [0, 1).
        num_heads: number of heads.
        qkv_bias: whether ``W_query``, ``W_key`` and ``W_value`` have a bias
            (``out_proj`` always has).
        use_sdpa: whether to take the fast path when the weights are not
            requested.

    Shape:
        - Input ``x``: ``(batch, num_tokens, d_in)``, with
          ``num_tokens <= context_length`` (with ``use_cache=True``, the
          cached tokens plus ``num_tokens`` at most ``context_length``, and
          ``batch`` the batch the cache was filled with).
        - Input ``key_padding_mask``: ``(batch, num_tokens)``, boolean, True =
          padding (masked out).
        - Output: ``(batch, num_tokens, d_out)``; with ``need_weights=True``
          also the attention weights, ``(batch, num_heads, num_tokens,
          num_keys)``, after dropout, where ``num_keys = num_tokens`` (plus
          the cached tokens with ``use_cache=True``).
        - ``cache_k``, ``cache_v``: ``(batch, num_heads, num_cached,
          head_dim)``.

    A query whose every visible key is padding gets a context vector of zeros
    (before ``out_proj``) on both paths, never ``nan``.
    """

    mask: torch.Tensor
    cache_k: torch.Tensor | None
    cache_v: torch.Tensor | None

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
        *,
        use_sdpa: bool = True,
    ) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out = check_positive_int("d_out", d_out)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.head_dim = check_divisible("d_out", d_out, num_heads)
        self.context_length = check_positive_int(
            "context_length", context_length
        )
        self.use_sdpa = use_sdpa
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.register_buffer(
            "mask", causal_mask(context_length), persistent=False
        )
        # Not in the state dict, so no load writes it: write it after each one
        # (after to_empty() on a module built on "meta", it is garbage).
        self.register_load_state_dict_post_hook(refill_causal_mask)
        # The keys and values of the tokens seen so far, when generating with
        # use_cache=True: state of one generation, not of the model.
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.register_load_state_dict_post_hook(clear_cache)

    def reset_parameters(self) -> None:
        for linear in (self.W_query, self.W_key, self.W_value, self.out_proj):
            linear.reset_parameters()
        refill_causal_mask(self)
        self.reset_cache()

    def reset_cache(self) -> None:
        clear_cache(self)

    # For type checkers (the package ships py.typed): need_weights=True adds
    # the weights to what forward returns, and a flag known only at run time
    # may give either.
    @overload
    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: Literal[False] = False,
        *,
        use_cache: bool = False,
        cache: StaticKVCache | None = None,
    ) -> torch.Tensor: ...

    @overload
    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        *,
        need_weights: Literal[True],
        use_cache: bool = False,
        cache: StaticKVCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    @overload
    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        *,
        use_cache: bool = False,
        cache: StaticKVCache | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        *,
        use_cache: bool = False,
        cache: StaticKVCache | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Context vectors of ``x``, ``(batch, num_tokens, d_out)``; with ``need_weights``, the weights too."""
        check_tensor(
            "x",
            x,
            ("batch", "num_tokens", "d_in"),
            last_dim=self.d_in,
            like=self,
        )
        b, num_tokens, _ = x.shape
        check_num_tokens(num_tokens, self.context_length)
        if use_cache:
            if key_padding_mask is not None:
                raise ValueError(
                    "key_padding_mask cannot be combined with use_cache=True: "
                    "the cache would forget which of its tokens were padding"
                )
            check_cache_input(self.cache_k, b, num_tokens, self.context_length)
        if cache is not None:
            check_static_cache(cache, self, use_cache, key_padding_mask)
        num_past = num_cached(self) if use_cache else 0
        num_keys = num_past + num_tokens
        # The queries are the last num_tokens of num_keys positions: their
        # rows of the mask, bottom-right aligned. (num_tokens, num_keys)
        mask = self.mask[num_past:num_keys, :num_keys]
        if isinstance(key_padding_mask, bool):
            # The book's forward(x, use_cache) takes it second; here it is
            # keyword-only, after the padding.
            raise TypeError(
                "key_padding_mask must be a boolean tensor or None, got "
                f"{key_padding_mask}: use_cache is keyword-only, "
                "module(x, use_cache=True)"
            )
        if key_padding_mask is not None:
            check_mask(
                "key_padding_mask",
                key_padding_mask,
                (b, num_tokens),
                exact=True,
            )
            # (num_tokens, num_tokens) | (b, 1, 1, num_tokens)
            # -> (b, 1, num_tokens, num_tokens)
            mask = mask | key_padding_mask[:, None, None, :]

        # (b, t, d_out) -> (b, num_heads, t, head_dim)
        queries = split_heads(self.W_query(x), self.num_heads)
        # (b, t, d_out) -> (b, num_heads, t, head_dim)
        keys = split_heads(self.W_key(x), self.num_heads)
        # (b, t, d_out) -> (b, num_heads, t, head_dim)
        values = split_heads(self.W_value(x), self.num_heads)
        if use_cache:
            # -> (b, num_heads, num_past + t, head_dim)
            keys, values = append_to_cache(self, keys, values)
        # What each query may not see; None when it may see every key, as one
        # new token after the module's cache may: no mask then, which would
        # only cost launches and rule out fused kernels.
        hidden = None if key_padding_mask is None and num_tokens == 1 else mask
        if cache is not None:
            # -> (b, num_heads, num_keys, head_dim), and the mask of the
            # cache's slots, (t, num_keys) or None when all are visible
            keys, values, hidden = cache.update(keys, values)

        if need_weights or not self.use_sdpa:
            # (b, h, t, head_dim) @ (b, h, head_dim, num_keys)
            # -> (b, h, t, num_keys)
            attn_scores = queries @ keys.transpose(2, 3)
            attn_weights = masked_softmax(
                attn_scores / self.head_dim**0.5, hidden
            )
            attn_weights = self.dropout(attn_weights)
            # (b, h, t, num_keys) @ (b, h, num_keys, head_dim)
            # -> (b, h, t, head_dim)
            context_vec = attn_weights @ values
        else:
            dropout_p = self.dropout.p if self.training else 0.0
            if cache is None and key_padding_mask is None and num_past == 0:
                # is_causal aligns the mask top-left, which is right only
                # when the queries start at position 0.
                context_vec = F.scaled_dot_product_attention(
                    queries, keys, values, dropout_p=dropout_p, is_causal=True
                )
            else:
                context_vec = F.scaled_dot_product_attention(
                    queries,
                    keys,
                    values,
                    attn_mask=None if hidden is None else to_sdpa_mask(hidden),
                    dropout_p=dropout_p,
                )
                if key_padding_mask is not None:
                    # Some backends return nan for a query that may attend to
                    # nothing (only padding can hide every key); the explicit
                    # path returns zeros there, and so must this one.
                    # (b, 1, t, 1)
                    fully_masked = mask.all(dim=-1, keepdim=True)
                    context_vec = context_vec.masked_fill(fully_masked, 0.0)

        # (b, h, t, head_dim) -> (b, t, d_out)
        context_vec = merge_heads(context_vec)
        context_vec = self.out_proj(context_vec)
        if need_weights:
            return context_vec, attn_weights
        return context_vec

    if TYPE_CHECKING:
        # mha(x, ...) as typed as mha.forward(x, ...): torch annotates
        # nn.Module.__call__ as returning Any.
        __call__ = forward


# --8<-- [end:MultiHeadAttention]
