"""Grouped-query attention (GQA): groups of query heads share one key/value head."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_cache_input,
    check_divisible,
    check_dropout,
    check_kv_groups,
    check_positive_int,
    check_static_cache,
    check_tensor,
)
from .heads import merge_heads, split_heads
from .kv_cache import (
    append_to_cache,
    clear_cache,
    num_cached,
)
from .masks import causal_mask, masked_softmax, to_sdpa_mask
from .static_cache import StaticKVCache

# scaled_dot_product_attention takes enable_gqa from torch 2.5 on.
SDPA_HAS_GQA = tuple(
    int(part) for part in torch.__version__.split(".")[:2]
) >= (2, 5)


# --8<-- [start:GroupedQueryAttention]
class GroupedQueryAttention(nn.Module):
    """Causal self-attention in which groups of query heads share key/value heads.

    ``num_heads`` query heads, as in
    [`MultiHeadAttention`][attention_lib.multihead.MultiHeadAttention], but
    only ``num_kv_groups`` key heads and value heads: each serves
    ``group_size = num_heads // num_kv_groups`` consecutive query heads (query
    heads ``0 .. group_size - 1`` use key/value head 0, and so on).
    ``num_kv_groups=1`` is multi-query attention (MQA),
    ``num_kv_groups=num_heads`` is multi-head attention. ``W_key`` and
    ``W_value`` are ``num_heads / num_kv_groups`` times smaller than in
    multi-head attention, and so is the KV cache.

    The signature, the order in which the parameters are created (``W_key``,
    ``W_value``, ``W_query``, ``out_proj`` without bias) and the cache API
    (``forward(x, use_cache=True)``, ``reset_cache()``, the non-persistent
    buffers ``cache_k`` and ``cache_v``) are those of the book's GQA code
    (``ch04/04_gqa``), so the same seed gives the same module; unlike it, a
    call without ``use_cache`` keeps the cache. (The book's Llama 3 and Qwen3
    chapters use ``(d_in, d_out, num_heads, num_kv_groups, dtype)``, without
    dropout.) There is no ``context_length`` and no mask buffer: the causal
    mask is built for each forward, aligned bottom-right when the cache holds
    earlier tokens. With ``cache=`` a
    [`StaticKVCache`][attention_lib.static_cache.StaticKVCache] of
    ``num_kv_groups`` heads holds the keys and values instead (not with
    ``use_cache=True``).

    Two paths agree to floating-point rounding: the fast path passes the
    key/value heads to `torch.nn.functional.scaled_dot_product_attention`
    with ``enable_gqa=True``; the explicit path (``use_sdpa=False``, and
    always with torch older than 2.5, which lacks ``enable_gqa``) repeats each
    key/value head with ``repeat_interleave`` and computes the weights as the
    book does.

    Args:
        d_in: size of each input vector.
        d_out: size of the output; must be divisible by ``num_heads``.
        dropout: dropout probability on the attention weights, in [0, 1).
        num_heads: number of query heads.
        num_kv_groups: number of key/value heads; must divide ``num_heads``.
        dtype: dtype of the parameters (the default dtype when None).
        qkv_bias: whether ``W_query``, ``W_key`` and ``W_value`` have a bias.
        use_sdpa: whether to take the fast path.

    Shape:
        - Input ``x``: ``(batch, num_tokens, d_in)``; with ``use_cache=True``,
          ``batch`` is the batch the cache was filled with.
        - Output: ``(batch, num_tokens, d_out)``.
        - ``cache_k``, ``cache_v``: ``(batch, num_kv_groups, num_cached,
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
        num_kv_groups: int,
        dtype: torch.dtype | None = None,
        qkv_bias: bool = False,
        *,
        use_sdpa: bool = True,
    ) -> None:
        super().__init__()
        self.d_in = check_positive_int("d_in", d_in)
        self.d_out = check_positive_int("d_out", d_out)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.head_dim = check_divisible("d_out", d_out, num_heads)
        self.group_size = check_kv_groups(num_heads, num_kv_groups)
        self.num_kv_groups = num_kv_groups
        self.use_sdpa = use_sdpa
        kv_dim = num_kv_groups * self.head_dim
        self.W_key = nn.Linear(d_in, kv_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, kv_dim, bias=qkv_bias, dtype=dtype)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(check_dropout(dropout))
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
        cache: StaticKVCache | None = None,
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
        if cache is not None:
            check_static_cache(cache, self, use_cache)
        num_past = num_cached(self) if use_cache else 0

        # (b, t, d_out) -> (b, num_heads, t, head_dim)
        queries = split_heads(self.W_query(x), self.num_heads)
        # (b, t, kv_dim) -> (b, num_kv_groups, t, head_dim)
        keys = split_heads(self.W_key(x), self.num_kv_groups)
        # (b, t, kv_dim) -> (b, num_kv_groups, t, head_dim)
        values = split_heads(self.W_value(x), self.num_kv_groups)
        if use_cache:
            # -> (b, num_kv_groups, num_past + t, head_dim)
            keys, values = append_to_cache(self, keys, values)
        num_keys = num_past + num_tokens
        fast_path = self.use_sdpa and SDPA_HAS_GQA
        mask = None
        if cache is not None:
            # -> (b, num_kv_groups, num_keys, head_dim), and the mask of the
            # cache's slots, (t, num_keys) or None when all are visible
            keys, values, mask = cache.update(keys, values)
        elif not fast_path or (num_past > 0 and num_tokens > 1):
            # The queries are the last num_tokens of num_keys positions.
            mask = causal_mask(
                num_tokens, num_keys, device=x.device, align="lower_right"
            )  # (num_tokens, num_keys)

        if fast_path:
            # Without a cache is_causal builds no mask; one new token may
            # see every key, so it needs none; only a chunk after a cache
            # does, and a StaticKVCache with static_shapes, whose empty
            # slots must be hidden. (A mask rules out FlashAttention.)
            attn_mask = None if mask is None else to_sdpa_mask(mask)
            # enable_gqa: SDPA pairs each key/value head with its group of
            # query heads itself (without a copy on the fused kernels; the
            # math backend repeats them).
            context_vec = F.scaled_dot_product_attention(
                queries,
                keys,
                values,
                attn_mask=attn_mask,
                dropout_p=self.dropout.p if self.training else 0.0,
                is_causal=num_past == 0 and cache is None,
                enable_gqa=True,
            )
        else:
            # Query head i uses key/value head i // group_size, so each
            # key/value head is repeated group_size times *in place*:
            # [K0, K1] -> [K0, K0, K1, K1] (.repeat would give
            # [K0, K1, K0, K1] and pair query heads with the wrong keys).
            # (b, num_kv_groups, num_keys, head_dim)
            # -> (b, num_heads, num_keys, head_dim)
            keys = keys.repeat_interleave(self.group_size, dim=1)
            values = values.repeat_interleave(self.group_size, dim=1)
            # (b, h, t, head_dim) @ (b, h, head_dim, num_keys)
            # -> (b, h, t, num_keys)
            attn_scores = queries @ keys.transpose(2, 3)
            attn_weights = masked_softmax(
                attn_scores / self.head_dim**0.5, mask
            )
            attn_weights = self.dropout(attn_weights)
            # (b, h, t, num_keys) @ (b, h, num_keys, head_dim)
            # -> (b, h, t, head_dim)
            context_vec = attn_weights @ values

        # (b, h, t, head_dim) -> (b, t, d_out)
        context_vec = merge_heads(context_vec)
        return self.out_proj(context_vec)


# --8<-- [end:GroupedQueryAttention]
