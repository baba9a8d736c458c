"""What the scoring functions and the D2L-style modules (DotProductAttention, AdditiveAttention,
GeneralMultiHeadAttention) promise that the other tests left open: ``attention_weights`` before the first call,
the scale ``1/sqrt(d)`` taken from the vector size and not from the number of queries, which layers have biases
(by default and with ``bias=``), masking by valid lengths as PyTorch's attention masks, and additive scores over
any leading dimensions."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import attention_lib as al

# --- attention_weights before the first forward ----------------------------------------------------

D2L_MODULES: dict[str, Callable[[], torch.nn.Module]] = {
    "DotProductAttention": lambda: al.DotProductAttention(0.0),
    "AdditiveAttention": lambda: al.AdditiveAttention(2, 3, 4, 0.0),
    "GeneralMultiHeadAttention": lambda: al.GeneralMultiHeadAttention(3, 4, 5, 6, 2, 0.0),
}


@pytest.mark.parametrize("make", D2L_MODULES.values(), ids=D2L_MODULES.keys())
def test_attention_weights_are_none_before_the_first_forward(make: Callable[[], torch.nn.Module]) -> None:
    """The documented type is ``Tensor | None``: plotting code tests ``is None`` to know that nothing ran yet."""
    assert make().attention_weights is None


# --- DotProductAttention: the scale and the valid lengths ------------------------------------------


def test_dot_product_attention_equals_pytorch_sdpa_with_valid_lens_as_mask() -> None:
    """Scores are scaled by 1/sqrt(d), d the size of a query (4 here), not by the number of queries (3) or
    keys (5); a query's keys past its valid length are masked out as SDPA's boolean mask (True = attend) does."""
    gen = torch.Generator().manual_seed(0)
    queries, keys = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 5, 4, generator=gen)
    values = torch.randn(2, 5, 6, generator=gen)
    valid_lens = torch.tensor([[1, 3, 5], [5, 2, 4]])  # (batch, num_queries); no 0, where SDPA gives NaN
    attention = al.DotProductAttention(0.0)
    context_vec = attention(queries, keys, values, valid_lens)

    attend = torch.arange(5) < valid_lens[..., None]  # (batch, num_queries, num_keys)
    torch.testing.assert_close(context_vec, F.scaled_dot_product_attention(queries, keys, values, attn_mask=attend))
    eye = torch.eye(5).expand(2, 5, 5)  # values = identity: SDPA's output is its weights
    attn_weights = F.scaled_dot_product_attention(queries, keys, eye, attn_mask=attend)
    torch.testing.assert_close(attention.attention_weights, attn_weights)


# --- which layers have biases ----------------------------------------------------------------------


def test_additive_attention_has_the_books_layers_without_bias() -> None:
    """The book's layers W_k, W_q, w_v, in that order and without bias: a D2L state_dict loads as is, and the
    same seed draws the same weights as the book's nn.Linear(..., bias=False) layers (a bias would draw more)."""
    torch.manual_seed(0)
    attention = al.AdditiveAttention(key_size=2, query_size=3, num_hiddens=4, dropout=0.0)
    shapes = {name: tuple(param.shape) for name, param in attention.named_parameters()}
    assert list(shapes.items()) == [("W_k.weight", (4, 2)), ("W_q.weight", (4, 3)), ("w_v.weight", (1, 4))]

    torch.manual_seed(0)
    book = [torch.nn.Linear(2, 4, bias=False), torch.nn.Linear(3, 4, bias=False), torch.nn.Linear(4, 1, bias=False)]
    for layer, book_layer in zip((attention.W_k, attention.W_q, attention.w_v), book, strict=True):
        assert torch.equal(layer.weight, book_layer.weight)


@pytest.mark.parametrize(
    ("kwargs", "has_bias"), [({}, False), ({"bias": False}, False), ({"bias": True}, True)], ids=["default", "F", "T"]
)
def test_general_multihead_biases_follow_the_bias_argument(kwargs: dict[str, bool], has_bias: bool) -> None:
    """No bias by default, as in the book; ``bias=True`` gives all four projections one, ``bias=False`` none."""
    mha = al.GeneralMultiHeadAttention(3, 4, 5, 6, 2, 0.0, **kwargs)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        layer = getattr(mha, name)
        assert (layer.bias is not None) == has_bias, name
        if has_bias:
            assert layer.bias.shape == (6,)


def test_general_multihead_with_bias_equals_torch_multihead_attention() -> None:
    """With biases, keys and values of their own sizes (kdim, vdim) and valid lengths as a key padding mask, the
    output and the per-head weights are nn.MultiheadAttention's with the same weights copied in."""
    torch.manual_seed(0)
    mha = al.GeneralMultiHeadAttention(
        key_size=3, query_size=8, value_size=5, num_hiddens=8, num_heads=2, dropout=0.0, bias=True
    )
    ref = torch.nn.MultiheadAttention(8, 2, bias=True, kdim=3, vdim=5, batch_first=True)
    with torch.no_grad():
        ref.q_proj_weight.copy_(mha.W_q.weight)
        ref.k_proj_weight.copy_(mha.W_k.weight)
        ref.v_proj_weight.copy_(mha.W_v.weight)
        ref.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
        ref.out_proj.weight.copy_(mha.W_o.weight)
        ref.out_proj.bias.copy_(mha.W_o.bias)
    queries, keys, values = torch.randn(2, 4, 8), torch.randn(2, 6, 3), torch.randn(2, 6, 5)
    valid_lens = torch.tensor([2, 6])

    out = mha(queries, keys, values, valid_lens)
    key_padding_mask = torch.arange(6) >= valid_lens[:, None]  # True = ignored
    expected, expected_weights = ref(
        queries, keys, values, key_padding_mask=key_padding_mask, average_attn_weights=False
    )
    torch.testing.assert_close(out, expected)
    assert mha.attention_weights is not None
    torch.testing.assert_close(mha.attention_weights.reshape(2, 2, 4, 6), expected_weights)


# --- additive scores over any leading dimensions ---------------------------------------------------


def additive_reference(
    queries: torch.Tensor, keys: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, w_v: torch.Tensor
) -> torch.Tensor:
    """``w_vᵀ tanh(W_q q + W_k k)`` for each pair of one query and one key, over the same leading indices."""
    attn_scores = torch.empty(*queries.shape[:-1], keys.shape[-2])
    for index in itertools.product(*map(range, attn_scores.shape)):
        *lead, i, j = index
        attn_scores[index] = w_v[0] @ torch.tanh(W_q @ queries[(*lead, i)] + W_k @ keys[(*lead, j)])
    return attn_scores


@pytest.mark.parametrize("lead", [(), (2, 3)], ids=["unbatched", "batch-heads"])
def test_additive_scores_over_any_leading_dims(lead: tuple[int, ...]) -> None:
    """The module docstring promises ``(..., num_queries, d_q)``: unbatched 2-D inputs and (batch, heads) 4-D
    ones score like the pair-by-pair formula; num_hiddens (5) differs from num_keys (6) and num_queries (4)."""
    gen = torch.Generator().manual_seed(0)
    queries, keys = torch.randn(*lead, 4, 3, generator=gen), torch.randn(*lead, 6, 2, generator=gen)
    W_q, W_k, w_v = torch.randn(5, 3, generator=gen), torch.randn(5, 2, generator=gen), torch.randn(1, 5, generator=gen)
    attn_scores = al.additive_scores(queries, keys, W_q, W_k, w_v)
    assert attn_scores.shape == (*lead, 4, 6)
    torch.testing.assert_close(attn_scores, additive_reference(queries, keys, W_q, W_k, w_v))
