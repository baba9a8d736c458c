"""A KV cache allocated once and written in place: what inference engines decode with.

The cache of [`attention_lib.kv_cache`][attention_lib.kv_cache] grows with ``torch.cat``, which
allocates a new tensor and copies the whole cache at every step. ``StaticKVCache`` allocates room for
``max_tokens`` tokens up front and writes each new token's keys and values into the next free slot,
so a step allocates nothing and copies only the new token.

It has two modes, because a CUDA graph replays the kernels it recorded, with the shapes and the
Python numbers of the recording:

* eager (the default): a Python counter says how many slots are filled, and attention reads only
  those, ``(batch, num_kv_heads, num_cached, head_dim)``. Cheapest in eager mode, on a CPU above all,
  but a graph would freeze the counter at its value during the capture.
* ``static_shapes=True``: the counter is a tensor, ``position``, read and advanced by kernels, and
  attention reads the whole buffer, ``(batch, num_kv_heads, max_tokens, head_dim)``, with a mask that
  hides the slots not written yet. Every step then has the same shapes and no Python number that
  changes, which ``torch.cuda.graph`` and ``torch.compile(mode="reduce-overhead")`` need.

Pass it to ``MultiHeadAttention`` or ``GroupedQueryAttention`` as ``cache=``; one cache per layer.
Its buffers are ``persistent=False``: they move with ``.to(device)`` but are never in a state dict.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_cache_update, check_positive_int
from .masks import causal_mask


# --8<-- [start:StaticKVCache]
class StaticKVCache(nn.Module):
    """Keys and values of ``max_tokens`` tokens, allocated once, written in place.

    Args:
        batch: number of sequences.
        num_kv_heads: key/value heads of the layer it serves.
        max_tokens: the most tokens it holds (prompt and generated).
        head_dim: size of each head.
        static_shapes: attend to the whole buffer with a mask, for CUDA
            graphs and ``torch.compile``; otherwise only to the filled slots.
        dtype: of the keys and values; the layer's must match.
        device: where the buffers live; the layer's keys must be there.

    Shape:
        - ``keys``, ``values``: ``(batch, num_kv_heads, max_tokens, head_dim)``.
        - ``position``: ``()``, the number of filled slots (static_shapes).
    """

    keys: torch.Tensor
    values: torch.Tensor
    position: torch.Tensor
    slots: torch.Tensor

    def __init__(
        self,
        batch: int,
        num_kv_heads: int,
        max_tokens: int,
        head_dim: int,
        *,
        static_shapes: bool = False,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        shape = (
            check_positive_int("batch", batch),
            check_positive_int("num_kv_heads", num_kv_heads),
            check_positive_int("max_tokens", max_tokens),
            check_positive_int("head_dim", head_dim),
        )
        self.static_shapes = static_shapes
        empty = torch.zeros(shape, dtype=dtype, device=device)
        self.register_buffer("keys", empty, persistent=False)
        self.register_buffer("values", empty.clone(), persistent=False)
        # static_shapes: the counter lives on the device, so that a replayed
        # graph reads and advances it; eager: a Python int, read for free.
        self.register_buffer(
            "position",
            torch.zeros((), dtype=torch.long, device=device),
            persistent=False,
        )
        self.num_filled = 0
        # The slot indices, to compare with the queries' positions.
        self.register_buffer(
            "slots", torch.arange(max_tokens, device=device), persistent=False
        )

    def reset(self) -> None:
        """Empty the cache in place (a captured graph keeps its buffers)."""
        self.position.zero_()
        self.num_filled = 0

    def update(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Write the new tokens after the filled slots; return what to attend to.

        Args:
            keys: the new tokens' keys, ``(batch, num_kv_heads, t, head_dim)``.
            values: the new tokens' values, the same shape.

        Returns:
            ``(keys, values, mask)``: the filled slots, ``(batch,
            num_kv_heads, num_keys, head_dim)``, and the mask ``(t,
            num_keys)``, True = masked, or None when every key is visible
            (one new token, eager). ``num_keys`` is ``max_tokens`` with
            static_shapes, else the slots filled so far.

        Eager, more than ``max_tokens`` tokens raise ``ValueError``. With
        static_shapes nothing counts them on the host (that would wait for
        the device): past ``max_tokens``, ``index_copy_`` fails, on a GPU
        with a device-side assert. ``reset()`` before a new sequence.
        """
        check_cache_update(self, keys, values)
        t = keys.shape[2]
        if self.static_shapes:
            # (t,): the new tokens' positions, computed on the device
            new_positions = self.slots[:t] + self.position
            # -> slots position .. position + t - 1 of dimension 2
            self.keys.index_copy_(2, new_positions, keys)
            self.values.index_copy_(2, new_positions, values)
            self.position.add_(t)
            # A query sees the slots up to its own position; the later
            # ones are its future, or still empty.
            # (max_tokens,) > (t, 1) -> (t, max_tokens)
            hidden = self.slots > new_positions[:, None]
            return self.keys, self.values, hidden
        start, end = self.num_filled, self.num_filled + t
        # (b, h, t, head_dim) -> slots start .. end - 1
        self.keys[:, :, start:end] = keys
        self.values[:, :, start:end] = values
        self.num_filled = end
        mask: torch.Tensor | None = None
        if t > 1:
            mask = causal_mask(t, end, device=keys.device, align="lower_right")
        # (b, h, end, head_dim): views, no copy
        return self.keys[:, :, :end], self.values[:, :, :end], mask


# --8<-- [end:StaticKVCache]


# --8<-- [start:capture_decode_step]
def capture_decode_step(
    module: nn.Module, cache: StaticKVCache, token: torch.Tensor
) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    """Record one decoding step of ``module`` with ``cache`` as a CUDA graph.

    Args:
        module: ``MultiHeadAttention`` or ``GroupedQueryAttention``, on a
            GPU, in eval mode.
        cache: a ``StaticKVCache`` with ``static_shapes=True``, on that GPU.
        token: the graph's input, ``(batch, 1, d_in)``: copy each new token
            into it, then replay.

    Returns:
        ``(graph, output)``: ``graph.replay()`` runs the step for the token
        in ``token`` at the cache's position, advances the position, and
        writes the result into ``output``, ``(batch, 1, d_out)``.
    """
    if not cache.static_shapes:
        raise ValueError(
            "cache must have static_shapes=True: a graph replays the shapes "
            "and numbers it recorded, and an eager cache's are Python ints"
        )
    position = cache.position.clone()
    # Warm up on a side stream (kernels load, workspaces are allocated), as
    # torch.cuda.graph asks; then undo the warm-up's move of the position.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        module(token, cache=cache)
    torch.cuda.current_stream().wait_stream(stream)
    cache.position.copy_(position)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        # Recorded, not run: nothing is written and the position stays.
        output = module(token, cache=cache)
    return graph, output


# --8<-- [end:capture_decode_step]
