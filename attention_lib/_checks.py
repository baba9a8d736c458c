"""Argument checks shared by every module.

Each check raises an exception whose message names the argument and says
what was expected, and whose type says which kind of mistake it is, the same
everywhere in the package:

* ``TypeError``: the argument has the wrong type (not a tensor, not an
  integer) or the wrong dtype (integer token ids where floats go, a float mask
  where a boolean one goes);
* ``ValueError``: the type is right but the value is not: a wrong rank, shape
  or size, a number out of range, a tensor on another device, or options that
  contradict each other.

They are plain ``if`` statements rather than ``assert`` so that ``python -O``
keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .static_cache import StaticKVCache


def check_positive_int(name: str, value: object) -> int:
    message = f"{name} must be a positive integer, got {value!r}"
    # bool is a subclass of int, but True for a size is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(message)
    if value <= 0:
        raise ValueError(message)
    return value


def check_dropout(dropout: object) -> float:
    message = f"dropout must be a probability in [0, 1), got {dropout!r}"
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
        raise TypeError(message)
    if not 0.0 <= dropout < 1.0:
        raise ValueError(message)
    return float(dropout)


def check_divisible(name: str, size: int, num_heads: int) -> int:
    """Return ``head_dim`` after checking that the heads split ``size`` evenly."""
    if size % num_heads != 0:
        raise ValueError(
            f"{name} must be divisible by num_heads, got {name}={size} and num_heads={num_heads} "
            f"({name} / num_heads = {size / num_heads:g})"
        )
    return size // num_heads


def check_tensor(
    name: str,
    x: object,
    dims: Sequence[str],
    last_dim: int | None = None,
    allow_unbatched: bool = False,
    like: torch.nn.Module | None = None,
    any_leading: bool = False,
) -> torch.Tensor:
    """Check that ``x`` is a floating-point tensor laid out as ``dims``.

    ``dims`` names the dimensions, e.g. ``("batch", "num_tokens", "d_in")``;
    with ``allow_unbatched`` the leading batch dimension may be missing, and
    with ``any_leading`` any number of leading dimensions (batch, heads) may
    come before ``dims``. ``last_dim`` is the required size of the last one.
    ``like``, the module ``x`` goes into: ``x`` must have its weights' dtype
    and device, which its layers would otherwise refuse with a message that
    names neither.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__}"
        )
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor (e.g. torch.float32), got dtype {x.dtype}; "
            f"token ids must go through an embedding layer first"
        )
    if any_leading and x.dim() < len(dims):
        raise ValueError(
            f"{name} must be a tensor of shape (..., {', '.join(dims)}) with at least "
            f"{len(dims)} dimensions, got a {x.dim()}-D tensor of shape {tuple(x.shape)}"
        )
    ranks = (len(dims) - 1, len(dims)) if allow_unbatched else (len(dims),)
    if not any_leading and x.dim() not in ranks:
        layout = ", ".join(dims)
        rank_text = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(
            f"{name} must be a {rank_text} tensor of shape ({layout}), "
            f"got a {x.dim()}-D tensor of shape {tuple(x.shape)}"
        )
    if last_dim is not None and x.shape[-1] != last_dim:
        raise ValueError(
            f"{name} must have size {last_dim} in its last dimension ({dims[-1]}), got shape {tuple(x.shape)}"
        )
    weight = None if like is None else next(like.parameters(), None)
    # Under autocast the layers convert x themselves.
    if weight is not None and not _autocast(x.device.type):
        if x.dtype != weight.dtype:
            raise TypeError(
                f"{name} must have the dtype of the module's weights, {weight.dtype}, got {x.dtype}: "
                f"convert one to the other, x.to({weight.dtype}) or module.to({x.dtype})"
            )
        if x.device != weight.device:
            raise ValueError(
                f"{name} must be on the device of the module's weights, {weight.device}, got {x.device}: "
                f"move one to the other, x.to(module_device) or module.to(x.device)"
            )
    return x


def _autocast(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 names no device
        return torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()
    except RuntimeError:  # a device without autocast, such as meta
        return False


def check_qkv(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> None:
    """Check that queries, keys and values are 3-D and agree in batch size and number of keys."""
    check_tensor("queries", queries, ("batch", "num_queries", "query_size"))
    check_tensor("keys", keys, ("batch", "num_keys", "key_size"))
    check_tensor("values", values, ("batch", "num_keys", "value_size"))
    if not queries.shape[0] == keys.shape[0] == values.shape[0]:
        raise ValueError(
            f"queries, keys and values must have the same batch size, got "
            f"{queries.shape[0]}, {keys.shape[0]} and {values.shape[0]}"
        )
    if keys.shape[1] != values.shape[1]:
        raise ValueError(
            f"keys and values must have the same number of positions (one value per key), got "
            f"{keys.shape[1]} and {values.shape[1]}"
        )


def check_num_tokens(num_tokens: int, context_length: int) -> None:
    if num_tokens > context_length:
        raise ValueError(
            f"the input has {num_tokens} tokens, more than context_length={context_length}; "
            f"shorten the input or create the module with a larger context_length"
        )


def check_valid_lens(
    valid_lens: object, batch_size: int, num_queries: int, num_keys: int
) -> torch.Tensor:
    """Check ``valid_lens`` of shape ``(batch,)`` or ``(batch, num_queries)`` with values in [0, num_keys]."""
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(
            f"valid_lens must be a torch.Tensor, got {type(valid_lens).__name__}"
        )
    if valid_lens.shape not in ((batch_size,), (batch_size, num_queries)):
        raise ValueError(
            f"valid_lens must have shape (batch,) = ({batch_size},) or (batch, num_queries) = "
            f"({batch_size}, {num_queries}), got {tuple(valid_lens.shape)}"
        )
    if valid_lens.dtype == torch.bool or valid_lens.is_complex():
        raise TypeError(
            f"valid_lens must hold integer lengths, got dtype {valid_lens.dtype}"
        )
    if valid_lens.is_floating_point() and not torch.equal(
        valid_lens, valid_lens.round()
    ):
        raise ValueError(
            f"valid_lens must hold whole numbers, got {valid_lens.tolist()}"
        )
    if valid_lens.numel() and (
        valid_lens.min() < 0 or valid_lens.max() > num_keys
    ):
        raise ValueError(
            f"valid_lens must lie in [0, {num_keys}] (the number of keys), got {valid_lens.tolist()}"
        )
    return valid_lens


def valid_lens_mask(
    valid_lens: torch.Tensor | None, queries: torch.Tensor, keys: torch.Tensor
) -> torch.Tensor | None:
    """The padding mask for ``valid_lens``, checked against queries and keys.

    Returns:
        ``None`` when ``valid_lens`` is ``None``; else a boolean mask, True at
        the padding, ``(batch, 1, num_keys)`` for ``(batch,)`` lengths and
        ``(batch, num_queries, num_keys)`` for ``(batch, num_queries)`` ones
        ([`padding_mask`][attention_lib.masks.padding_mask]).
    """
    from .masks import padding_mask  # the masks module imports these checks

    if valid_lens is None:
        return None
    check_valid_lens(
        valid_lens, queries.shape[0], queries.shape[1], keys.shape[1]
    )
    return padding_mask(valid_lens.to(queries.device), keys.shape[1])


def check_boolean(name: str, mask: object) -> torch.Tensor:
    """Check that ``mask`` is a boolean tensor, of any shape."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(mask).__name__}"
        )
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = masked out), got dtype {mask.dtype}"
        )
    return mask


def check_mask(
    name: str, mask: object, shape: Sequence[int], exact: bool = False
) -> torch.Tensor:
    """Check a boolean mask of exactly ``shape``, or (by default) one that broadcasts to ``shape``."""
    mask = check_boolean(name, mask)
    if exact:
        if tuple(mask.shape) != tuple(shape):
            raise ValueError(
                f"{name} must have shape {tuple(shape)}, got {tuple(mask.shape)}"
            )
        return mask
    try:
        # torch leaves broadcast_shapes unannotated.
        broadcast = torch.broadcast_shapes(mask.shape, tuple(shape))  # type: ignore[no-untyped-call]
    except RuntimeError:
        broadcast = None
    if broadcast != tuple(shape):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the attention scores' shape {tuple(shape)}"
        )
    return mask


def check_cache_input(
    cache_k: torch.Tensor | None,
    batch_size: int,
    num_tokens: int,
    max_tokens: int | None,
) -> None:
    """Refuse an input that cannot extend a KV cache (``cache_k``, ``None`` when empty) before any work."""
    if cache_k is None:
        return
    if cache_k.shape[0] != batch_size:
        raise ValueError(
            f"x has batch size {batch_size}, but the KV cache holds {cache_k.shape[0]} sequences; "
            "a cache continues the same sequences: call reset_cache() before starting new ones"
        )
    num_cached = cache_k.shape[2]
    if max_tokens is not None and num_cached + num_tokens > max_tokens:
        raise ValueError(
            f"the KV cache holds {num_cached} tokens and x adds {num_tokens}: {num_cached + num_tokens} is "
            f"more than context_length={max_tokens}; call reset_cache() (and start again from a shorter "
            "context), or create the module with a larger context_length"
        )


def check_cache_update(
    cache: StaticKVCache, keys: torch.Tensor, values: torch.Tensor
) -> None:
    """Refuse keys and values that a ``StaticKVCache`` cannot hold, before writing any."""
    check_cache_tensors(cache.keys, keys, values)
    max_tokens = cache.keys.shape[2]
    if (
        not cache.static_shapes
        and cache.num_filled + keys.shape[2] > max_tokens
    ):
        raise ValueError(
            f"the cache holds {cache.num_filled} tokens and {keys.shape[2]} more do not fit in "
            f"max_tokens={max_tokens}: call reset() before a new sequence, or allocate a larger cache"
        )


def check_cache_tensors(
    buffer: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> None:
    """Refuse keys and values whose batch, heads, head size, dtype or device differ from a cache ``buffer``'s."""
    b, h, _, head_dim = buffer.shape
    for name, new in (("keys", keys), ("values", values)):
        if new.dim() != 4 or (new.shape[0], new.shape[1], new.shape[3]) != (
            b,
            h,
            head_dim,
        ):
            raise ValueError(
                f"{name} must have shape (batch={b}, num_kv_heads={h}, num_tokens, head_dim={head_dim}) "
                f"to fit the cache, got {tuple(new.shape)}: a cache serves one layer and one batch"
            )
        if new.dtype != buffer.dtype:
            raise TypeError(
                f"{name} must have the cache's dtype, {buffer.dtype}, got {new.dtype}: "
                f"create the cache with the layer's dtype"
            )
        if new.device != buffer.device:
            raise ValueError(
                f"{name} must be on the cache's device, {buffer.device}, got {new.device}: "
                f"create the cache on the layer's device"
            )


def check_static_cache(
    cache: object,
    module: torch.nn.Module,
    use_cache: bool,
    key_padding_mask: torch.Tensor | None = None,
) -> None:
    """Refuse a ``cache=`` argument that is not a ``StaticKVCache`` or that another option contradicts."""
    from .static_cache import (
        StaticKVCache,  # the cache module imports these checks
    )

    if not isinstance(cache, StaticKVCache):
        raise TypeError(
            f"cache must be a StaticKVCache or None, got {type(cache).__name__}"
        )
    if use_cache:
        raise ValueError(
            "cache= and use_cache=True are two caches for the same tokens: pass one of them "
            "(cache= for a cache allocated once, use_cache=True for the module's own)"
        )
    if key_padding_mask is not None:
        raise ValueError(
            "key_padding_mask cannot be combined with cache=: the cache would forget which of its "
            "tokens were padding"
        )
    max_tokens = cache.keys.shape[2]
    context_length = getattr(module, "context_length", None)
    if context_length is not None and max_tokens > context_length:
        raise ValueError(
            f"the cache has max_tokens={max_tokens}, more than the module's "
            f"context_length={context_length}: allocate it with max_tokens <= {context_length}"
        )


def check_kv_groups(num_heads: int, num_kv_groups: object) -> int:
    """Return ``group_size``, the number of query heads per key/value head."""
    num_kv_groups = check_positive_int("num_kv_groups", num_kv_groups)
    if num_heads % num_kv_groups != 0:
        raise ValueError(
            f"num_heads must be divisible by num_kv_groups, got num_heads={num_heads} and "
            f"num_kv_groups={num_kv_groups}: every key/value head serves the same number of query heads"
        )
    return num_heads // num_kv_groups


def check_integer_tensor(
    name: str, x: object, dims: Sequence[str]
) -> torch.Tensor:
    """Check that ``x`` is an integer tensor (not bool) laid out as ``dims`` or, with one dimension less, unbatched."""
    layouts = " or ".join(
        str(tuple(dims[first:])).replace("'", "") for first in (1, 0)
    )
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of shape {layouts}, got {type(x).__name__}"
        )
    if x.dtype == torch.bool or x.is_floating_point() or x.is_complex():
        raise TypeError(
            f"{name} must hold integers (e.g. torch.long), got dtype {x.dtype}"
        )
    if x.dim() not in (len(dims) - 1, len(dims)):
        raise ValueError(
            f"{name} must be a tensor of shape {layouts}, got {tuple(x.shape)}"
        )
    return x


def check_left_lens(
    valid_lens: object, num_keys: int, keys_name: str = "num_keys"
) -> torch.Tensor:
    """Check one length per sequence, ``(batch,)``, whole numbers in [0, num_keys] (a left-padded batch)."""
    check_positive_int(keys_name, num_keys)
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(
            f"valid_lens must be a torch.Tensor of shape (batch,), got {type(valid_lens).__name__}"
        )
    if valid_lens.dim() != 1:
        raise ValueError(
            f"valid_lens must be a tensor of shape (batch,), one length per sequence, got {tuple(valid_lens.shape)}"
        )
    return check_valid_lens(valid_lens, valid_lens.shape[0], 1, num_keys)


def check_non_negative_int(name: str, value: object) -> int:
    message = f"{name} must be a non-negative integer, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(message)
    if value < 0:
        raise ValueError(message)
    return value


def check_num_keys(num_queries: int, num_keys: object) -> int:
    """``num_keys``, ``num_queries`` when None: the queries are the last of the keys' positions, so no fewer."""
    if num_keys is None:
        return num_queries
    num_keys = check_positive_int("num_keys", num_keys)
    if num_keys < num_queries:
        raise ValueError(
            f"num_keys ({num_keys}) must be at least num_queries ({num_queries}): the queries are the last "
            "num_queries of the num_keys positions (the earlier ones come from a KV cache)"
        )
    return num_keys
