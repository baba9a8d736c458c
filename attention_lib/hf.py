"""A Hugging Face model's attention in ``attention_lib``: GPT-2's attention layer as a `MultiHeadAttention`.

GPT-2 (``transformers``' ``GPT2Attention``) keeps its projections in two
``Conv1D`` layers: ``c_attn``, the query, key and value projections side by
side, and ``c_proj``, the output projection. A ``Conv1D`` computes
``x @ weight + bias``, so its weight is ``(d_in, d_out)``: the transpose of an
``nn.Linear``'s ``(d_out, d_in)``. [`from_gpt2_attention`][attention_lib.hf.from_gpt2_attention]
copies them, transposed, into a
[`MultiHeadAttention`][attention_lib.multihead.MultiHeadAttention], which then
computes what the layer computes, attention weights included.

This module does not import ``transformers``: ``attention_lib`` depends on
torch alone. It reads the layer's parameters by their names, so any module
laid out like GPT-2's attention works.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int
from .multihead import MultiHeadAttention


def _tensor(attn: nn.Module, path: str) -> torch.Tensor:
    """``attn.<path>``, which must be a tensor."""
    value: object = attn
    for name in path.split("."):
        value = getattr(value, name, None)
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"attn.{path} must be a tensor, as in GPT-2's attention layer "
            f"(its c_attn and c_proj are Conv1D layers), got {type(value).__name__}"
        )
    return value


def _check_gpt2_options(attn: nn.Module) -> None:
    """Refuse the layers whose attention `MultiHeadAttention` does not compute."""
    if getattr(attn, "is_cross_attention", False):
        raise ValueError(
            "attn is a cross-attention layer (its queries come from q_attn, its keys and values from another "
            "sequence); from_gpt2_attention reads causal self-attention"
        )
    if not getattr(attn, "scale_attn_weights", True) or getattr(
        attn, "scale_attn_by_inverse_layer_idx", False
    ):
        raise ValueError(
            "attn scales its scores otherwise than by 1 / sqrt(head_dim) (scale_attn_weights=False or "
            "scale_attn_by_inverse_layer_idx=True); MultiHeadAttention scales by 1 / sqrt(head_dim)"
        )


def _check_shapes(
    w_attn: torch.Tensor,
    b_attn: torch.Tensor,
    w_proj: torch.Tensor,
    b_proj: torch.Tensor,
) -> tuple[int, int]:
    """``(d_in, d_out)`` of a GPT-2 layer's parameters, after checking that they fit together."""
    if w_attn.dim() != 2 or w_attn.shape[1] % 3 != 0:
        raise ValueError(
            "attn.c_attn.weight must have shape (d_in, 3 * d_out) (Conv1D: the queries', keys' and values' "
            f"weights side by side), got {tuple(w_attn.shape)}"
        )
    d_in, d_out = w_attn.shape[0], w_attn.shape[1] // 3
    expected = {
        "c_attn.bias": (b_attn, (3 * d_out,)),
        "c_proj.weight": (w_proj, (d_out, d_out)),
        "c_proj.bias": (b_proj, (d_out,)),
    }
    for name, (tensor, shape) in expected.items():
        if tuple(tensor.shape) != shape:
            raise ValueError(
                f"attn.{name} must have shape {shape} to go with c_attn.weight of shape "
                f"{tuple(w_attn.shape)}, got {tuple(tensor.shape)}"
            )
    return d_in, d_out


# --8<-- [start:from_gpt2_attention]
def from_gpt2_attention(
    attn: nn.Module, context_length: int
) -> MultiHeadAttention:
    """A `MultiHeadAttention` with the weights of GPT-2's attention layer.

    Args:
        attn: one layer's attention, such as
            ``model.transformer.h[0].attn`` of a ``GPT2LMHeadModel``: a
            module with ``c_attn`` and ``c_proj`` (each with ``weight`` and
            ``bias``) and ``num_heads``.
        context_length: the largest number of tokens the module accepts,
            GPT-2's ``config.n_positions``.

    Returns:
        A new ``MultiHeadAttention(d_in, d_out, context_length, 0.0,
        num_heads, qkv_bias=True)`` on the layer's device and dtype, holding
        copies of its weights: fed the input of ``attn`` (the output of the
        block's ``ln_1``), it returns the output of ``attn`` and, with
        ``need_weights=True``, the attention weights that
        ``output_attentions=True`` returns for the layer. It has no dropout.

    Raises:
        TypeError: ``attn`` has no such parameters.
        ValueError: their shapes do not fit together, or ``attn`` is a
            cross-attention layer or scales its scores otherwise than by
            ``1 / sqrt(head_dim)``.
    """
    _check_gpt2_options(attn)
    num_heads = check_positive_int(
        "attn.num_heads", getattr(attn, "num_heads", None)
    )
    w_attn = _tensor(attn, "c_attn.weight")  # (d_in, 3 * d_out)
    b_attn = _tensor(attn, "c_attn.bias")  # (3 * d_out,)
    w_proj = _tensor(attn, "c_proj.weight")  # (d_out, d_out)
    b_proj = _tensor(attn, "c_proj.bias")  # (d_out,)
    d_in, d_out = _check_shapes(w_attn, b_attn, w_proj, b_proj)
    mha = MultiHeadAttention(
        d_in, d_out, context_length, 0.0, num_heads, qkv_bias=True
    ).to(device=w_attn.device, dtype=w_attn.dtype)
    # Conv1D computes x @ weight + bias: its weight is nn.Linear's,
    # transposed. Queries, keys and values sit side by side in c_attn.
    # (d_in, 3 * d_out) -> 3 x (d_in, d_out)
    weights = w_attn.split(d_out, dim=1)
    biases = b_attn.split(d_out)  # (3 * d_out,) -> 3 x (d_out,)
    layers = (mha.W_query, mha.W_key, mha.W_value)
    with torch.no_grad():
        for layer, weight, bias in zip(layers, weights, biases, strict=True):
            layer.weight.copy_(weight.T)  # (d_in, d_out) -> (d_out, d_in)
            layer.bias.copy_(bias)
        mha.out_proj.weight.copy_(w_proj.T)  # (d_out, d_out), transposed
        mha.out_proj.bias.copy_(b_proj)
    return mha


# --8<-- [end:from_gpt2_attention]
