"""Causal and padding masks, and a softmax that respects them.

The convention, stated once for the whole package: **in a boolean mask, True means "masked out"** —
that key position may not be attended to. This is the convention of the book's
``mask.bool()``/``masked_fill`` code and of `torch.nn.MultiheadAttention` (``attn_mask`` and
``key_padding_mask``). `torch.nn.functional.scaled_dot_product_attention` uses the opposite one
(True = "takes part in attention"); pass it ``to_sdpa_mask(mask)``.
"""

from __future__ import annotations

import torch

from ._checks import (
    check_boolean,
    check_mask,
    check_positive_int,
    check_valid_lens,
)


def causal_mask(
    num_queries: int,
    num_keys: int | None = None,
    device: torch.device | str | None = None,
    *,
    align: str | None = None,
) -> torch.Tensor:
    """The mask that hides every key after the query's own position.

    With as many queries as keys, query ``i`` sits at position ``i`` and sees keys ``0..i``. With a
    different number, ``align`` says where the queries sit, as in
    ``torch.nn.attention.bias.causal_upper_left`` / ``causal_lower_right``:

    - ``"lower_right"``: the queries are the *last* ``num_queries`` positions (decoding with a KV
      cache), so query ``i`` sees keys ``0..i + num_keys - num_queries``;
    - ``"upper_left"``: the queries are the *first* positions, so query ``i`` sees keys ``0..i``. This
      is what ``F.scaled_dot_product_attention(..., is_causal=True)`` does.

    Args:
        num_queries: number of query positions (rows).
        num_keys: number of key positions (columns); defaults to ``num_queries``.
        device: where to create the mask.
        align: ``"lower_right"`` or ``"upper_left"``; required when ``num_keys != num_queries``
            (the two give different masks, and neither is right for every caller).

    Returns:
        Boolean tensor of shape ``(num_queries, num_keys)``, True where the key comes after the query.
    """
    check_positive_int("num_queries", num_queries)
    num_keys = (
        num_queries
        if num_keys is None
        else check_positive_int("num_keys", num_keys)
    )
    if align not in (None, "lower_right", "upper_left"):
        raise ValueError(
            f"align must be 'lower_right' or 'upper_left', got {align!r}"
        )
    if align is None and num_keys != num_queries:
        raise ValueError(
            f"align is required when num_queries ({num_queries}) and num_keys ({num_keys}) "
            "differ: align='lower_right' if the queries are the last positions "
            "(decoding with a KV cache), align='upper_left' if they are the first "
            "(what scaled_dot_product_attention's is_causal=True assumes)"
        )
    # Query i sits at position i + offset; it may not see the keys after that position.
    offset = num_keys - num_queries if align == "lower_right" else 0
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1 + offset)


def refill_causal_mask(
    module: torch.nn.Module, incompatible_keys: object = None
) -> None:
    """Write the causal pattern into ``module.mask`` again, in place.

    ``CausalAttention`` and ``MultiHeadAttention`` keep their mask out of the
    state dict (``persistent=False``), so ``load_state_dict`` never writes it.
    After ``to_empty()`` (a module built on the ``meta`` device, then given
    real memory) the mask is uninitialized memory, so both modules call this
    after every load (a ``load_state_dict`` post-hook, which passes
    ``incompatible_keys``) and in ``reset_parameters()``.

    Args:
        module: a module with a square boolean ``mask`` buffer.
        incompatible_keys: ignored.
    """
    mask = getattr(module, "mask", None)
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            "module.mask must be a torch.Tensor (the module's causal mask "
            f"buffer), got {type(mask).__name__}"
        )
    if mask.dim() != 2 or mask.shape[0] != mask.shape[1]:
        raise ValueError(
            "module.mask must be a square (context_length, context_length) "
            f"tensor, got shape {tuple(mask.shape)}"
        )
    with torch.no_grad():
        mask.copy_(causal_mask(mask.shape[0], device=mask.device))


def padding_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """The mask that hides the padding at the end of each sequence.

    Args:
        valid_lens: how many keys are real (not padding), either one length per sequence, shape
            ``(batch,)``, or one length per query, shape ``(batch, num_queries)``; whole numbers in
            ``[0, num_keys]``.
        num_keys: number of key positions, padding included.

    Returns:
        Boolean tensor, True at padded key positions: shape ``(batch, 1, num_keys)`` for
        ``(batch,)`` lengths and ``(batch, num_queries, num_keys)`` for ``(batch, num_queries)``
        lengths, so that either broadcasts over scores of shape ``(batch, num_queries, num_keys)``.
    """
    check_positive_int("num_keys", num_keys)
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(
            f"valid_lens must be a torch.Tensor, got {type(valid_lens).__name__}"
        )
    if valid_lens.dim() not in (1, 2):
        raise ValueError(
            f"valid_lens must be a tensor of shape (batch,) or (batch, num_queries), "
            f"got {tuple(valid_lens.shape)}"
        )
    num_queries = valid_lens.shape[1] if valid_lens.dim() == 2 else 1
    check_valid_lens(valid_lens, valid_lens.shape[0], num_queries, num_keys)
    positions = torch.arange(num_keys, device=valid_lens.device)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    # (num_keys,) >= (batch, q, 1)
    # -> (batch, q, num_keys): key j is padding when j >= its length.
    return positions >= lens[..., None]


def masked_fill_value(dtype: torch.dtype) -> float:
    """The most negative finite number of ``dtype``: the fill value for masked scores.

    The common ``-1e9`` is not representable in float16, whose largest magnitude is 65504:
    ``masked_fill`` refuses it with an overflow error, and once ``-1e9`` is itself stored in float16
    (a mask buffer of ``-1e9`` after ``model.half()``, say) it is ``-inf``, so the additive form
    ``scores + mask * -1e9`` gives ``0 * -inf = nan`` for every unmasked score. ``-inf`` itself is no
    better: a row whose every key is masked becomes ``softmax([-inf, ...]) = nan``. The finite minimum
    of the dtype is safe in float16, bfloat16, float32 and float64.
    """
    return torch.finfo(dtype).min


# --8<-- [start:masked_softmax]
def masked_softmax(
    attn_scores: torch.Tensor, mask: torch.Tensor | None = None, dim: int = -1
) -> torch.Tensor:
    """Softmax over ``dim`` that gives masked positions exactly zero weight.

    Masked scores are replaced by
    [`masked_fill_value`][attention_lib.masks.masked_fill_value] before the
    softmax, and the masked weights are set to exactly 0 afterwards. A row in
    which every position is masked therefore comes out as all zeros, never
    ``nan``, in every floating dtype; its gradient is zero as well.

    Args:
        attn_scores: attention scores of any shape, typically ``(batch,
            num_queries, num_keys)`` or ``(batch, num_heads, num_queries,
            num_keys)``.
        mask: boolean tensor that broadcasts to ``attn_scores``; True = masked
            out. ``None`` gives the plain softmax.
        dim: the dimension to normalize, the keys by default.

    Returns:
        Attention weights of the same shape and dtype as ``attn_scores``;
        unmasked weights along ``dim`` sum to 1 (or the row is all zeros if
        everything was masked).
    """
    if mask is None:
        return torch.softmax(attn_scores, dim=dim)
    check_mask("mask", mask, attn_scores.shape)
    filled = attn_scores.masked_fill(
        mask, masked_fill_value(attn_scores.dtype)
    )
    return torch.softmax(filled, dim=dim).masked_fill(mask, 0.0)


# --8<-- [end:masked_softmax]


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert a mask of this package (True = masked out) for ``F.scaled_dot_product_attention``.

    ``scaled_dot_product_attention`` reads a boolean ``attn_mask`` the other way round: True means the
    position takes part in attention.

    Args:
        mask: boolean mask of any shape, True = masked out.

    Returns:
        Boolean tensor of the same shape, True = may attend.
    """
    return check_boolean("mask", mask).logical_not()
