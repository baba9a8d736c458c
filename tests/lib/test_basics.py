"""Weight-free self-attention and the scoring functions."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al


@given(num_tokens=st.integers(1, 8), d=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_loops_equal_matrix_products(num_tokens: int, d: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    inputs = torch.randn(num_tokens, d, generator=gen, dtype=torch.float64)
    query = inputs[seed % num_tokens]
    torch.testing.assert_close(al.attn_scores_loop(inputs, query), al.attn_scores_for_query(inputs, query))
    torch.testing.assert_close(al.attn_scores_all_loop(inputs), al.attn_scores_all(inputs))
    weights = torch.softmax(al.attn_scores_all(inputs), -1)
    for i in range(num_tokens):
        torch.testing.assert_close(al.context_vector_loop(inputs, weights[i]), al.context_vectors(inputs, weights)[i])


def test_naive_softmax_overflows_where_torch_softmax_does_not() -> None:
    small = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(al.naive_softmax(small), torch.softmax(small, -1))
    large = torch.tensor([10.0, 100.0, 1000.0])
    assert al.naive_softmax(large).isnan().any()
    torch.testing.assert_close(torch.softmax(large, -1), torch.tensor([0.0, 0.0, 1.0]))


def test_normalize_by_sum_breaks_on_negative_scores() -> None:
    weights = al.normalize_by_sum(torch.tensor([1.0, -2.0, 2.0]))
    torch.testing.assert_close(weights.sum(), torch.tensor(1.0))
    assert (weights < 0).any()  # not a probability distribution: why softmax is used instead


def test_normalizing_the_other_dim() -> None:
    scores = al.attn_scores_all(al.journey_inputs())
    by_rows, by_cols = torch.softmax(scores, dim=-1), torch.softmax(scores, dim=0)
    torch.testing.assert_close(by_rows.sum(-1), torch.ones(6))
    torch.testing.assert_close(by_cols.sum(0), torch.ones(6))
    assert not torch.allclose(by_rows.sum(-1), by_cols.sum(-1))


def test_scaling_keeps_the_spread_independent_of_d() -> None:
    gen = torch.Generator().manual_seed(0)
    for d in (4, 64, 1024):
        q, k = torch.randn(1, 2000, d, generator=gen), torch.randn(1, 2000, d, generator=gen)
        raw = (q * k).sum(-1)
        assert raw.var().item() == pytest.approx(d, rel=0.15)
        scaled = al.scaled_dot_product_scores(q[:, :200], k[:, :200])
        assert scaled.var().item() == pytest.approx(1.0, rel=0.15)


def test_scoring_functions_agree_with_formulas() -> None:
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 5, 4, generator=gen)
    torch.testing.assert_close(al.dot_product_scores(q, k), torch.einsum("bqd,bkd->bqk", q, k))
    torch.testing.assert_close(al.scaled_dot_product_scores(q, k), torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(4))
    W = torch.randn(4, 6, generator=gen)
    k6 = torch.randn(2, 5, 6, generator=gen)
    torch.testing.assert_close(al.general_scores(q, k6, W), torch.einsum("bqd,de,bke->bqk", q, W, k6))
    torch.testing.assert_close(al.general_scores(q, k, torch.eye(4)), al.dot_product_scores(q, k))
    W_q, W_k, w_v = torch.randn(3, 4, generator=gen), torch.randn(3, 6, generator=gen), torch.randn(1, 3, generator=gen)
    expected = torch.empty(2, 3, 5)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                expected[b, i, j] = w_v[0] @ torch.tanh(W_q @ q[b, i] + W_k @ k6[b, j])
    torch.testing.assert_close(al.additive_scores(q, k6, W_q, W_k, w_v), expected)
