"""The masks as FlexAttention ``mask_mod`` functions.

``torch.nn.attention.flex_attention`` (PyTorch 2.5 and later) takes a mask
as a function of four indices, ``mask_mod(b, h, q_idx, kv_idx)``: the
sequence, the head, the query and the key. ``create_block_mask`` calls it
for every block of ``(q_idx, kv_idx)`` and records which blocks hold no
allowed key at all, which ``flex_attention`` then skips.

**A mask_mod returns True where attention is ALLOWED**, the opposite of
this package's masks (True = masked out) and the same as the boolean
``attn_mask`` of ``scaled_dot_product_attention``. For the same rule, at
every index, ``mask_mod(b, h, i, j) == ~mask[b, i, j]``: each function below
returns the negation of its tensor mask's condition.

The indices arrive as integer tensors (``create_block_mask`` and
``flex_attention`` evaluate the function on many of them at once), so a
mask_mod uses only tensor operations, and the tensors it reads (document
ids, lengths) must be on the device of the queries.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._checks import (
    check_integer_tensor,
    check_left_lens,
    check_non_negative_int,
    check_positive_int,
)

#: ``mask_mod(b, h, q_idx, kv_idx) -> allowed``: what ``create_block_mask`` takes.
MaskMod = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor
]


# --8<-- [start:mask_mods]
def causal_mask_mod(q_offset: int = 0) -> MaskMod:
    """The causal mask as a mask_mod: allowed where the key is not after the query.

    Args:
        q_offset: the position of the first query, the number of keys
            before it (cached); 0 when queries and keys are the same
            tokens. ``num_keys - num_queries`` gives
            [`causal_mask`][attention_lib.masks.causal_mask]'s
            ``align="lower_right"``.

    Returns:
        ``mask_mod(b, h, q_idx, kv_idx)``, True where query ``q_idx`` may
        attend to key ``kv_idx``.
    """
    check_non_negative_int("q_offset", q_offset)

    def causal(
        b: torch.Tensor,
        h: torch.Tensor,
        q_idx: torch.Tensor,
        kv_idx: torch.Tensor,
    ) -> torch.Tensor:
        return kv_idx <= q_idx + q_offset

    return causal


def sliding_window_mask_mod(window: int, q_offset: int = 0) -> MaskMod:
    """[`sliding_window_mask`][attention_lib.masks_beyond.sliding_window_mask] as a mask_mod.

    Args:
        window: how many keys each query sees, itself included.
        q_offset: the position of the first query (``num_keys -
            num_queries``), as in
            [`causal_mask_mod`][attention_lib.flex_masks.causal_mask_mod].

    Returns:
        ``mask_mod(b, h, q_idx, kv_idx)``, True where the key is at most
        ``window - 1`` positions before the query, and not after it.
    """
    check_positive_int("window", window)
    check_non_negative_int("q_offset", q_offset)

    def sliding_window(
        b: torch.Tensor,
        h: torch.Tensor,
        q_idx: torch.Tensor,
        kv_idx: torch.Tensor,
    ) -> torch.Tensor:
        back = q_idx + q_offset - kv_idx  # 0: the query's own position
        return (back >= 0) & (back < window)

    return sliding_window


def document_mask_mod(document_ids: torch.Tensor) -> MaskMod:
    """[`document_mask`][attention_lib.masks_beyond.document_mask] as a mask_mod.

    Args:
        document_ids: which document each token belongs to, integers of
            shape ``(num_tokens,)`` (every sequence of the batch packed the
            same way) or ``(batch, num_tokens)``.

    Returns:
        ``mask_mod(b, h, q_idx, kv_idx)``, True where the key is in the
        query's document and not after it.
    """
    check_integer_tensor("document_ids", document_ids, ("batch", "num_tokens"))
    # (batch, num_tokens): one row per sequence, or the same for all.
    ids = document_ids if document_ids.dim() == 2 else document_ids[None]
    shared = document_ids.dim() == 1

    def document(
        b: torch.Tensor,
        h: torch.Tensor,
        q_idx: torch.Tensor,
        kv_idx: torch.Tensor,
    ) -> torch.Tensor:
        row = 0 if shared else b
        same = ids[row, q_idx] == ids[row, kv_idx]
        return same & (kv_idx <= q_idx)

    return document


def left_padding_mask_mod(valid_lens: torch.Tensor, num_keys: int) -> MaskMod:
    """[`left_padding_mask`][attention_lib.masks_beyond.left_padding_mask] as a mask_mod.

    Combine it with [`causal_mask_mod`][attention_lib.flex_masks.causal_mask_mod]
    by ``torch.nn.attention.flex_attention.and_masks`` for
    [`left_padded_causal_mask`][attention_lib.masks_beyond.left_padded_causal_mask].

    Args:
        valid_lens: how many keys of each sequence are real (the last ones),
            shape ``(batch,)``, whole numbers in ``[0, num_keys]``.
        num_keys: number of key positions, padding included.

    Returns:
        ``mask_mod(b, h, q_idx, kv_idx)``, True where key ``kv_idx`` of
        sequence ``b`` is a real token.
    """
    check_left_lens(valid_lens, num_keys)
    num_pads = (num_keys - valid_lens).long()  # (batch,)

    def not_padding(
        b: torch.Tensor,
        h: torch.Tensor,
        q_idx: torch.Tensor,
        kv_idx: torch.Tensor,
    ) -> torch.Tensor:
        return kv_idx >= num_pads[b]

    return not_padding


# --8<-- [end:mask_mods]
