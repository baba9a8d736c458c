"""Masks beyond causal: a sliding window, packed documents, left padding.

Every mask here follows the package's convention, **True = masked out**, and
is built from the positions of the queries and the keys, as the causal mask
of [`attention_lib.masks`][attention_lib.masks] is:

- [`sliding_window_mask`][attention_lib.masks_beyond.sliding_window_mask]:
  causal, and each query sees only the last ``window`` positions, itself
  included (Mistral, Gemma, and Hugging Face's ``sliding_window``);
- [`document_mask`][attention_lib.masks_beyond.document_mask]: several
  documents packed into one sequence; a token sees only the earlier tokens
  of its own document (block-diagonal causal);
- [`left_padding_mask`][attention_lib.masks_beyond.left_padding_mask] and
  [`left_padding_position_ids`][attention_lib.masks_beyond.left_padding_position_ids]:
  a batch for generation, padded at the front so that every sequence ends at
  the same column and the next tokens are appended to all of them at once.

A query whose every key is masked (a padding query of a left-padded batch)
gets all-zero weights from [`masked_softmax`][attention_lib.masks.masked_softmax],
hence an all-zero output. ``scaled_dot_product_attention`` gives zeros there
on a CPU in recent PyTorch (2.13), but ``nan`` on some kernels and versions:
fill those rows with zeros, as
[`MultiHeadAttention`][attention_lib.multihead.MultiHeadAttention] does.
FlexAttention gives zeros.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._checks import (
    check_integer_tensor,
    check_left_lens,
    check_num_keys,
    check_positive_int,
)
from .masks import causal_mask


# --8<-- [start:sliding_window_mask]
def sliding_window_mask(
    num_queries: int,
    window: int,
    num_keys: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The causal mask that also hides every key more than ``window - 1`` positions back.

    ``window`` is the number of keys a query sees, itself included: the query
    at position ``i`` sees keys ``i - window + 1 .. i`` (those that exist).
    This is Hugging Face's ``sliding_window`` (``kv_idx > q_idx - window``,
    the value of Mistral's and Gemma's configs) and FlashAttention's
    ``window_size=(window - 1, 0)``. ``window >= num_keys`` gives the causal
    mask. As in [`causal_mask`][attention_lib.masks.causal_mask] with
    ``align="lower_right"``, the queries are the *last* ``num_queries`` of
    the ``num_keys`` positions, the earlier keys coming from a KV cache.

    Args:
        num_queries: number of query positions (rows).
        window: how many keys each query sees, itself included; positive.
        num_keys: number of key positions (columns), at least
            ``num_queries``; defaults to ``num_queries``.
        device: where to create the mask.

    Returns:
        Boolean tensor of shape ``(num_queries, num_keys)``, True where the
        key is after the query or ``window`` or more positions before it.
    """
    check_positive_int("num_queries", num_queries)
    check_positive_int("window", window)
    num_keys = check_num_keys(num_queries, num_keys)
    # Query i sits at position i + num_keys - num_queries (bottom-right).
    # (num_queries, 1)
    query_pos = torch.arange(num_queries, device=device)[:, None]
    query_pos = query_pos + (num_keys - num_queries)
    key_pos = torch.arange(num_keys, device=device)  # (num_keys,)
    # (num_queries, 1) - (num_keys,) -> (num_queries, num_keys):
    # how many positions back each key is; 0 is the query's own.
    back = query_pos - key_pos
    # Negative: the future. window or more: slid out of the window.
    return (back < 0) | (back >= window)


# --8<-- [end:sliding_window_mask]


# --8<-- [start:document_mask]
def document_mask(document_ids: torch.Tensor) -> torch.Tensor:
    """The block-diagonal causal mask of documents packed into one sequence.

    Training packs short documents one after another into each row, so that
    no compute is spent on padding. A token must then attend only to the
    earlier tokens of its own document: token ``i`` sees token ``j`` when
    ``j <= i`` and ``document_ids[j] == document_ids[i]``. With a single
    document this is the causal mask.

    Args:
        document_ids: which document each token belongs to, integers of
            shape ``(num_tokens,)`` or ``(batch, num_tokens)``; usually runs
            of equal ids (``[0, 0, 0, 1, 1, 2]``,
            [`document_ids_from_lengths`][attention_lib.masks_beyond.document_ids_from_lengths]).

    Returns:
        Boolean tensor of shape ``(num_tokens, num_tokens)`` or ``(batch,
        num_tokens, num_tokens)``, True where the key is in another document
        or after the query.
    """
    check_integer_tensor("document_ids", document_ids, ("batch", "num_tokens"))
    num_tokens = document_ids.shape[-1]
    check_positive_int("num_tokens (document_ids.shape[-1])", num_tokens)
    # (..., num_tokens, 1) == (..., 1, num_tokens)
    # -> (..., num_tokens, num_tokens): query's and key's document agree
    same_document = document_ids[..., :, None] == document_ids[..., None, :]
    future = causal_mask(num_tokens, device=document_ids.device)
    return ~same_document | future


# --8<-- [end:document_mask]


def document_ids_from_lengths(
    lengths: Sequence[int], device: torch.device | str | None = None
) -> torch.Tensor:
    """The document ids of documents of ``lengths`` tokens packed one after another.

    Args:
        lengths: each document's number of tokens, positive integers.
        device: where to create the ids.

    Returns:
        Long tensor of shape ``(sum(lengths),)``: ``lengths[0]`` zeros, then
        ``lengths[1]`` ones, and so on; ``[2, 3] -> [0, 0, 1, 1, 1]``.
    """
    if isinstance(lengths, torch.Tensor) or not isinstance(lengths, Sequence):
        raise TypeError(
            "lengths must be a sequence of positive integers (a list), got "
            f"{type(lengths).__name__}"
        )
    if not lengths:
        raise ValueError("lengths must name at least one document, got []")
    for index, length in enumerate(lengths):
        check_positive_int(f"lengths[{index}]", length)
    ids = torch.arange(len(lengths), device=device)
    return ids.repeat_interleave(torch.tensor(lengths, device=device))


# --8<-- [start:left_padding]
def left_padding_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """The mask that hides the padding at the *start* of each sequence.

    For generation a batch is padded on the left: every sequence then ends
    at the last column, and each step appends its next token there. Sequence
    ``b`` has ``num_keys - valid_lens[b]`` padding keys, then its tokens.

    Args:
        valid_lens: how many keys of each sequence are real (the last ones),
            shape ``(batch,)``, whole numbers in ``[0, num_keys]``.
        num_keys: number of key positions, padding included.

    Returns:
        Boolean tensor of shape ``(batch, 1, num_keys)``, True at the
        padding; it broadcasts over scores ``(batch, num_queries,
        num_keys)``.
    """
    check_left_lens(valid_lens, num_keys)
    positions = torch.arange(num_keys, device=valid_lens.device)
    num_pads = num_keys - valid_lens  # (batch,)
    # (num_keys,) < (batch, 1, 1) -> (batch, 1, num_keys)
    return positions < num_pads[:, None, None]


def left_padding_position_ids(
    valid_lens: torch.Tensor, num_tokens: int
) -> torch.Tensor:
    """Position ids that start at 0 at each sequence's first real token.

    A sequence padded with ``p`` tokens on the left must see its tokens at
    positions ``0, 1, ...``, as when it runs alone, not at ``p, p + 1, ...``.
    The padding gets position 0: a valid index for any position embedding,
    and what it computes never reaches a real token, which masks it out.

    Args:
        valid_lens: how many tokens of each sequence are real (the last
            ones), shape ``(batch,)``, whole numbers in ``[0, num_tokens]``.
        num_tokens: number of tokens per sequence, padding included.

    Returns:
        Long tensor of shape ``(batch, num_tokens)``: 0 at the padding,
        then ``0, 1, ..., valid_lens[b] - 1``.
    """
    check_left_lens(valid_lens, num_tokens, "num_tokens")
    positions = torch.arange(num_tokens, device=valid_lens.device)
    num_pads = (num_tokens - valid_lens).long()  # (batch,)
    # (num_tokens,) - (batch, 1) -> (batch, num_tokens), negative on
    # the padding, which clamp sets to 0.
    return (positions - num_pads[:, None]).clamp(min=0)


def left_padded_causal_mask(
    valid_lens: torch.Tensor,
    num_queries: int,
    num_keys: int | None = None,
) -> torch.Tensor:
    """The causal mask of a left-padded batch: no future, and no padding.

    The queries are the last ``num_queries`` of ``num_keys`` positions
    (bottom-right, as after a KV cache). The rows of padding queries have
    every key masked: their weights (with
    [`masked_softmax`][attention_lib.masks.masked_softmax]) and outputs are
    all zeros, and no real token ever reads them.

    Args:
        valid_lens: how many keys of each sequence are real (the last ones),
            shape ``(batch,)``, whole numbers in ``[0, num_keys]``.
        num_queries: number of query positions.
        num_keys: number of key positions, at least ``num_queries``;
            defaults to ``num_queries``.

    Returns:
        Boolean tensor of shape ``(batch, num_queries, num_keys)``, True
        where the key is padding or after the query.
    """
    check_positive_int("num_queries", num_queries)
    num_keys = check_num_keys(num_queries, num_keys)
    check_left_lens(valid_lens, num_keys)
    future = causal_mask(
        num_queries, num_keys, valid_lens.device, align="lower_right"
    )
    # (num_queries, num_keys) | (batch, 1, num_keys)
    # -> (batch, num_queries, num_keys)
    return future | left_padding_mask(valid_lens, num_keys)


# --8<-- [end:left_padding]
