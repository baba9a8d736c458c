"""The values printed in the book and the article, reproduced from attention_lib with the same seeds."""

from __future__ import annotations

import pytest
import torch

import attention_lib as al

# Printed values have four decimals; anything closer than half a unit in the last place matches.
PRINTED = {"atol": 5e-5, "rtol": 0}


@pytest.fixture
def inputs() -> torch.Tensor:
    return al.journey_inputs()


@pytest.fixture
def batch(inputs: torch.Tensor) -> torch.Tensor:
    return torch.stack((inputs, inputs))


def test_data_is_fresh_each_call() -> None:
    a = al.journey_inputs()
    a.zero_()
    assert al.journey_inputs()[0, 0] == pytest.approx(0.43)
    assert al.JOURNEY_WORDS == ("Your", "journey", "starts", "with", "one", "step")


def test_weight_free_values(inputs: torch.Tensor) -> None:
    query = inputs[1]
    attn_scores_2 = al.attn_scores_for_query(inputs, query)
    torch.testing.assert_close(attn_scores_2, torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]), **PRINTED)
    torch.testing.assert_close(
        al.normalize_by_sum(attn_scores_2), torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]), **PRINTED
    )
    attn_weights_2 = torch.softmax(attn_scores_2, dim=0)
    torch.testing.assert_close(
        attn_weights_2, torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]), **PRINTED
    )
    torch.testing.assert_close(
        al.context_vector_loop(inputs, attn_weights_2), torch.tensor([0.4419, 0.6515, 0.5683]), **PRINTED
    )
    attn_weights = torch.softmax(al.attn_scores_all(inputs), dim=-1)
    all_context_vecs = al.context_vectors(inputs, attn_weights)
    torch.testing.assert_close(all_context_vecs[0], torch.tensor([0.4421, 0.5931, 0.5790]), **PRINTED)
    torch.testing.assert_close(all_context_vecs[5], torch.tensor([0.4177, 0.6503, 0.5645]), **PRINTED)


def test_self_attention_v1_seed_123(inputs: torch.Tensor) -> None:
    torch.manual_seed(123)
    out = al.SelfAttentionV1(3, 2)(inputs)
    torch.testing.assert_close(out[1], torch.tensor([0.3061, 0.8210]), **PRINTED)
    expected = torch.tensor(
        [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
    )
    torch.testing.assert_close(out, expected, **PRINTED)


def test_self_attention_v2_seed_789(inputs: torch.Tensor) -> None:
    torch.manual_seed(789)
    out = al.SelfAttentionV2(3, 2)(inputs)
    expected = torch.tensor(
        [
            [-0.0739, 0.0713],
            [-0.0748, 0.0703],
            [-0.0749, 0.0702],
            [-0.0760, 0.0685],
            [-0.0763, 0.0679],
            [-0.0754, 0.0693],
        ]
    )
    torch.testing.assert_close(out, expected, **PRINTED)


CAUSAL_HEAD_0 = [
    [-0.4519, 0.2216],
    [-0.5874, 0.0058],
    [-0.6300, -0.0632],
    [-0.5675, -0.0843],
    [-0.5526, -0.0981],
    [-0.5299, -0.1081],
]
CAUSAL_HEAD_1 = [
    [0.4772, 0.1063],
    [0.5891, 0.3257],
    [0.6202, 0.3860],
    [0.5478, 0.3589],
    [0.5321, 0.3428],
    [0.5077, 0.3493],
]


def test_causal_attention_seed_123(batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    out = al.CausalAttention(3, 2, batch.shape[1], 0.0)(batch)
    assert out.shape == (2, 6, 2)
    torch.testing.assert_close(out, torch.tensor([CAUSAL_HEAD_0, CAUSAL_HEAD_0]), **PRINTED)


def test_wrapper_seed_123(batch: torch.Tensor) -> None:
    torch.manual_seed(123)
    out = al.MultiHeadAttentionWrapper(3, 2, batch.shape[1], 0.0, num_heads=2)(batch)
    assert out.shape == (2, 6, 4)
    expected = torch.cat([torch.tensor(CAUSAL_HEAD_0), torch.tensor(CAUSAL_HEAD_1)], dim=-1)
    torch.testing.assert_close(out, torch.stack([expected, expected]), **PRINTED)


@pytest.mark.parametrize("use_sdpa", [True, False])
def test_multihead_attention_seed_123(batch: torch.Tensor, use_sdpa: bool) -> None:
    torch.manual_seed(123)
    mha = al.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2, use_sdpa=use_sdpa)
    out = mha(batch)
    assert out.shape == (2, 6, 2)
    torch.testing.assert_close(out[0, 0], torch.tensor([0.3190, 0.4858]), **PRINTED)
    expected = torch.tensor(
        [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
    )
    torch.testing.assert_close(out, torch.stack([expected, expected]), **PRINTED)


def test_dessert_sentence_embedding() -> None:
    assert al.dessert_vocab() == {"Life": 0, "dessert": 1, "eat": 2, "first": 3, "is": 4, "short": 5}
    assert al.dessert_token_ids().tolist() == [0, 4, 5, 2, 1, 3]
    expected = torch.tensor(
        [
            [0.3374, -0.1778, -0.3035],
            [0.1794, 1.8951, 0.4954],
            [0.2692, -0.0770, -1.0205],
            [-0.2196, -0.3792, 0.7671],
            [-0.5880, 0.3486, 0.6603],
            [-1.1925, 0.6984, -1.4097],
        ]
    )
    before = torch.get_rng_state()
    embedded = al.dessert_embedding()
    torch.testing.assert_close(embedded, expected, **PRINTED)
    # The private generator leaves the reader's random state alone.
    assert torch.equal(torch.get_rng_state(), before)
    # ...and equals what the article's own code produces.
    torch.manual_seed(123)
    embed = torch.nn.Embedding(50_000, 3)
    torch.testing.assert_close(embedded, embed(al.dessert_token_ids()).detach(), rtol=0, atol=0)


def test_article_self_and_cross_attention() -> None:
    embedded = al.dessert_embedding()
    torch.manual_seed(123)
    sa = al.SelfAttentionV1(3, 2, d_out_v=4)
    torch.testing.assert_close(sa(embedded)[1], torch.tensor([0.5313, 1.3607, 0.7891, 1.3110]), **PRINTED)
    torch.testing.assert_close(sa(embedded)[0], torch.tensor([-0.1564, 0.1028, -0.0763, -0.0764]), **PRINTED)
    torch.manual_seed(123)
    cross = al.CrossAttention(3, 2, 4)
    second_input = torch.rand(8, 3)
    out = cross(embedded, second_input)
    assert out.shape == (6, 4)
    torch.testing.assert_close(out[0], torch.tensor([0.4231, 0.8665, 0.6503, 1.0042]), **PRINTED)
    torch.testing.assert_close(out[5], torch.tensor([0.3860, 0.8021, 0.5985, 0.9250]), **PRINTED)


def test_d2l_dot_product_and_additive_examples() -> None:
    # D2L's example: all keys equal, so the weights are uniform over each sequence's valid keys and
    # the output is the mean of the first 2 (resp. 6) value rows.
    keys = torch.ones(2, 10, 2)
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])
    expected = torch.tensor([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])

    torch.manual_seed(0)
    additive = al.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1).eval()
    torch.testing.assert_close(additive(torch.normal(0, 1, (2, 1, 20)), keys, values, valid_lens), expected)
    dot = al.DotProductAttention(dropout=0.5).eval()
    torch.testing.assert_close(dot(torch.normal(0, 1, (2, 1, 2)), keys, values, valid_lens), expected)
    assert dot.attention_weights is not None
    torch.testing.assert_close(dot.attention_weights[0, 0, :3], torch.tensor([0.5, 0.5, 0.0]))

    mha = al.GeneralMultiHeadAttention(100, 100, 100, 100, num_heads=5, dropout=0.5).eval()
    x, y = torch.ones(2, 4, 100), torch.ones(2, 6, 100)
    assert mha(x, y, y, torch.tensor([3, 2])).shape == (2, 4, 100)
    assert mha.attention_weights is not None
    assert mha.attention_weights.shape == (10, 4, 6)
