"""A KV cache for sliding-window attention: a ring buffer of ``window`` slots.

With a [`sliding_window_mask`][attention_lib.masks_beyond.sliding_window_mask]
no query looks further back than ``window`` positions, so a cache never needs
more than the last ``window`` tokens' keys and values, however long the
generation runs (Mistral's "rolling buffer cache"). The token at position
``p`` is written into slot ``p % window``, over the token ``window``
positions before it, which no later query can see.

A step of one token attends to the slots as they are: after the write they
hold exactly the keys that token may see, so it needs no mask, and the order
of the slots does not matter (attention sums over keys; positions, such as
rotary embeddings, are applied to the keys before they are cached). A step of
several tokens (a prompt, even one longer than the window) attends to the
cached keys, put back in order, followed by its own keys, with the sliding
window mask; only then are the last ``window`` of them written.

The outputs are those of a cache that keeps every token with the sliding
window mask on every step, in ``window`` slots instead of a number that
grows with the sequence.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_cache_tensors, check_positive_int
from .masks_beyond import sliding_window_mask


# --8<-- [start:SlidingWindowKVCache]
class SlidingWindowKVCache(nn.Module):
    """Keys and values of the last ``window`` tokens, in a ring buffer.

    Args:
        batch: number of sequences.
        num_kv_heads: key/value heads of the layer it serves.
        window: the sliding window, the number of keys a query sees
            (itself included), and the number of slots.
        head_dim: size of each head.
        dtype: of the keys and values; the layer's must match.
        device: where the buffers live; the layer's keys must be there.

    Shape:
        - ``keys``, ``values``: ``(batch, num_kv_heads, window, head_dim)``;
          the token at position ``p`` is in slot ``p % window``.
        - ``num_seen``: a Python int, the tokens written so far (the next
          token's position).
    """

    keys: torch.Tensor
    values: torch.Tensor

    def __init__(
        self,
        batch: int,
        num_kv_heads: int,
        window: int,
        head_dim: int,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        shape = (
            check_positive_int("batch", batch),
            check_positive_int("num_kv_heads", num_kv_heads),
            check_positive_int("window", window),
            check_positive_int("head_dim", head_dim),
        )
        self.window = window
        empty = torch.zeros(shape, dtype=dtype, device=device)
        self.register_buffer("keys", empty, persistent=False)
        self.register_buffer("values", empty.clone(), persistent=False)
        self.num_seen = 0

    def reset(self) -> None:
        """Empty the cache before a new sequence (the buffers stay)."""
        self.num_seen = 0

    def _in_order(self, buffer: torch.Tensor) -> torch.Tensor:
        """The cached tokens, oldest first, ``(b, h, num_cached, d)``."""
        filled = min(self.num_seen, self.window)
        # Roll the slot the next token takes to the front: it holds the
        # oldest token (or nothing yet), and the last `filled` slots after
        # it are the cached tokens, in order.
        rolled = buffer.roll(-(self.num_seen % self.window), dims=2)
        return rolled[:, :, self.window - filled :]

    def update(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Write the new tokens into their slots; return what to attend to.

        Args:
            keys: the new tokens' keys, ``(batch, num_kv_heads, t,
                head_dim)``, at positions ``num_seen .. num_seen + t - 1``.
            values: the new tokens' values, the same shape.

        Returns:
            ``(keys, values, mask)``: ``(batch, num_kv_heads, num_keys,
            head_dim)`` each, and the mask ``(t, num_keys)``, True = masked,
            or None when every key is visible. One token: the filled slots
            in slot order (attention does not depend on the keys' order),
            ``num_keys = min(num_seen + 1, window)``, and no mask. Several:
            the cached tokens in order, then the new ones, with the sliding
            window mask, ``num_keys = min(num_seen, window) + t``.
        """
        check_cache_tensors(self.keys, keys, values)
        t, start = keys.shape[2], self.num_seen
        if t == 1:
            # Over the token window positions back, which slid out.
            slot = start % self.window
            self.keys[:, :, slot : slot + 1] = keys
            self.values[:, :, slot : slot + 1] = values
            self.num_seen += 1
            filled = min(self.num_seen, self.window)
            return self.keys[:, :, :filled], self.values[:, :, :filled], None
        # The new queries need the cached keys that writing t tokens could
        # overwrite: attend to the cache and the new keys, then write.
        # (b, h, num_cached, d) + (b, h, t, d) -> (b, h, num_keys, d)
        all_keys = torch.cat([self._in_order(self.keys), keys], dim=2)
        all_values = torch.cat([self._in_order(self.values), values], dim=2)
        mask = sliding_window_mask(
            t, self.window, all_keys.shape[2], device=keys.device
        )
        # Only the last window new tokens stay: their positions and slots.
        kept = min(t, self.window)
        end = start + t
        positions = torch.arange(end - kept, end, device=keys.device)
        slots = positions % self.window  # all different: kept <= window
        self.keys.index_copy_(2, slots, keys[:, :, t - kept :])
        self.values.index_copy_(2, slots, values[:, :, t - kept :])
        self.num_seen = end
        return all_keys, all_values, mask


# --8<-- [end:SlidingWindowKVCache]
