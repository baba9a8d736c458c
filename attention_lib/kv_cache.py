"""The KV cache: keys and values of the tokens already processed, kept for the next forward.

When a model generates text one token at a time, every step would otherwise project the whole
sequence again to get keys and values that did not change. A module with a cache keeps them in two
buffers, ``cache_k`` and ``cache_v``, registered with ``persistent=False``: they move with
``.to(device)`` and ``.half()`` like the module's weights, but they are state of one generation,
not of the model, so ``state_dict()`` never holds them. ``None`` means the cache is empty.

The layout is the one attention works in, ``(batch, num_kv_heads, num_cached, head_dim)``: new
tokens are appended along dimension 2.
"""

from __future__ import annotations

from typing import Protocol

import torch


class HasKVCache(Protocol):
    """A module with a KV cache: its two buffers, ``None`` when empty."""

    cache_k: torch.Tensor | None
    cache_v: torch.Tensor | None


def num_cached(module: HasKVCache) -> int:
    """How many tokens ``module``'s cache holds (0 when it is empty)."""
    cache_k = module.cache_k
    return 0 if cache_k is None else int(cache_k.shape[2])


# --8<-- [start:append_to_cache]
def append_to_cache(
    module: HasKVCache, keys: torch.Tensor, values: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Append the new tokens' ``keys`` and ``values`` to ``module``'s cache and return all of it.

    Args:
        module: a module with ``cache_k`` and ``cache_v`` buffers (``None`` when empty).
        keys: the new tokens' keys, ``(batch, num_kv_heads, num_tokens, head_dim)``.
        values: the new tokens' values, the same shape.

    Returns:
        ``(cache_k, cache_v)``, each ``(batch, num_kv_heads, num_cached + num_tokens, head_dim)``:
        the cached tokens first, then the new ones.
    """
    if module.cache_k is not None and module.cache_v is not None:
        # (b, h, num_cached, head_dim) + (b, h, t, head_dim)
        # -> (b, h, num_cached + t, head_dim)
        keys = torch.cat([module.cache_k, keys], dim=2)
        values = torch.cat([module.cache_v, values], dim=2)
    module.cache_k, module.cache_v = keys, values
    return keys, values


# --8<-- [end:append_to_cache]


def clear_cache(module: HasKVCache, incompatible_keys: object = None) -> None:
    """Empty ``module``'s cache.

    Also a ``load_state_dict`` post-hook: new weights make the cached keys and
    values stale (``incompatible_keys`` is ignored).
    """
    module.cache_k, module.cache_v = None, None
