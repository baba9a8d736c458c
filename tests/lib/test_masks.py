"""Masks: shapes, the True = masked-out convention against both PyTorch APIs, and safe half precision."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def test_causal_mask_hides_the_future() -> None:
    mask = al.causal_mask(4)
    assert mask.dtype == torch.bool
    assert mask.tolist() == [
        [False, True, True, True],
        [False, False, True, True],
        [False, False, False, True],
        [False, False, False, False],
    ]
    assert al.causal_mask(4, align="lower_right").equal(mask)
    assert al.causal_mask(4, align="upper_left").equal(mask)


def test_causal_mask_with_fewer_queries_than_keys_puts_them_where_align_says() -> None:
    # Two queries, five keys: the last two positions (a KV cache) or the first two.
    assert al.causal_mask(2, 5, align="lower_right").tolist() == [
        [False, False, False, False, True],
        [False, False, False, False, False],
    ]
    assert al.causal_mask(2, 5, align="upper_left").tolist() == [
        [False, True, True, True, True],
        [False, False, True, True, True],
    ]


@given(num_queries=st.integers(1, 9), num_keys=st.integers(1, 9), align=st.sampled_from(["lower_right", "upper_left"]))
def test_causal_mask_is_pytorchs_causal_bias_inverted(num_queries: int, num_keys: int, align: str) -> None:
    # Imported here: torch.nn.attention.bias imports torch._dynamo (about 1.5 s), which every process that
    # only collects this file would pay for.
    from torch.nn.attention.bias import causal_lower_right, causal_upper_left

    variant = {"lower_right": causal_lower_right, "upper_left": causal_upper_left}[align]
    with warnings.catch_warnings():  # torch warns that lower_right leaves rows empty when queries outnumber keys
        warnings.simplefilter("ignore", UserWarning)
        may_attend = variant(num_queries, num_keys)._materialize()
    assert al.causal_mask(num_queries, num_keys, align=align).equal(~may_attend)


@given(num_queries=st.integers(1, 6), extra=st.integers(0, 5), seed=st.integers(0, 2**16))
def test_lower_right_decodes_what_the_full_sequence_computes_and_upper_left_does_not(
    num_queries: int, extra: int, seed: int
) -> None:
    """The last queries against every key, masked lower-right, give the last rows of full causal attention
    (what decoding with a KV cache needs); upper-left, SDPA's is_causal, gives them only when nothing is cached."""
    num_keys = num_queries + extra
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 2, num_keys, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)[:, :, -num_queries:]
    last = q[:, :, -num_queries:]  # (b, h, num_queries, head_dim)

    def attend(align: str) -> torch.Tensor:
        mask = al.to_sdpa_mask(al.causal_mask(num_queries, num_keys, align=align))
        return F.scaled_dot_product_attention(last, k, v, attn_mask=mask)

    torch.testing.assert_close(attend("lower_right"), full)
    upper_left = attend("upper_left")
    torch.testing.assert_close(upper_left, F.scaled_dot_product_attention(last, k, v, is_causal=True))
    if extra:  # query 0 then sees key 0 only: its output is that key's value
        torch.testing.assert_close(upper_left[:, :, 0], v[:, :, 0])
        assert not torch.allclose(upper_left, full)


def test_padding_mask_one_length_per_sequence() -> None:
    mask = al.padding_mask(torch.tensor([2, 0, 4]), num_keys=4)
    assert mask.shape == (3, 1, 4)
    assert mask[:, 0].tolist() == [
        [False, False, True, True],
        [True, True, True, True],
        [False, False, False, False],
    ]


def test_padding_mask_one_length_per_query() -> None:
    mask = al.padding_mask(torch.tensor([[1, 3], [2, 2]]), num_keys=3)
    assert mask.shape == (2, 2, 3)
    assert mask.tolist() == [
        [[False, True, True], [False, False, False]],
        [[False, False, True], [False, False, True]],
    ]


def test_padding_mask_accepts_whole_floats() -> None:
    assert torch.equal(al.padding_mask(torch.tensor([1.0, 2.0]), 3), al.padding_mask(torch.tensor([1, 2]), 3))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fully_masked_row_is_zero_not_nan(dtype: torch.dtype, device: torch.device) -> None:
    scores = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [60000.0, -60000.0, 0.0]], dtype=dtype, device=device)
    mask = torch.tensor([[False, True, False], [True, True, True], [False, False, True]], device=device)
    weights = al.masked_softmax(scores, mask)
    assert weights.dtype == dtype
    assert not weights.isnan().any()
    assert torch.equal(weights[1], torch.zeros(3, dtype=dtype, device=device))
    assert (weights[mask] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.tensor([1.0, 0.0, 1.0], dtype=dtype, device=device))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fully_masked_row_has_zero_gradient(dtype: torch.dtype) -> None:
    scores = torch.randn(2, 4, dtype=dtype, requires_grad=True)
    mask = torch.tensor([[False, False, True, True], [True, True, True, True]])
    (al.masked_softmax(scores, mask) * torch.arange(4, dtype=dtype)).sum().backward()
    assert scores.grad is not None
    assert not scores.grad.isnan().any()
    assert torch.equal(scores.grad[1], torch.zeros(4, dtype=dtype))
    assert torch.equal(scores.grad[0, 2:], torch.zeros(2, dtype=dtype))


def test_minus_1e9_is_unsafe_in_float16_and_our_fill_is_safe() -> None:
    """The failure the docstring of masked_fill_value describes, so the claim stays true."""
    scores = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    mask = torch.tensor([True, False, False])
    with pytest.raises(RuntimeError, match="overflow"):
        scores.masked_fill(mask, -1e9)
    additive = scores + mask.to(torch.float16) * torch.tensor(-1e9).to(torch.float16)
    assert torch.softmax(additive, -1).isnan().all()
    assert torch.tensor(-1e9).to(torch.float16) == float("-inf")
    fill = al.masked_fill_value(torch.float16)
    assert fill == -65504.0
    expected = torch.tensor([0.0, 0.2689, 0.7311], dtype=torch.float16)
    torch.testing.assert_close(al.masked_softmax(scores, mask), expected, atol=1e-3, rtol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_minus_inf_fill_gives_nan_for_fully_masked_rows(dtype: torch.dtype) -> None:
    """Why masked_softmax does not use -inf: softmax of an all -inf row is nan."""
    row = torch.full((3,), float("-inf"), dtype=dtype)
    assert torch.softmax(row, -1).isnan().all()


@given(
    b=st.integers(1, 3),
    t=st.integers(1, 7),
    seed=st.integers(0, 2**16),
)
def test_masked_softmax_matches_both_pytorch_conventions(b: int, t: int, seed: int) -> None:
    """One mask (True = masked out) gives the same weights as nn.MultiheadAttention and SDPA.

    nn.MultiheadAttention takes the mask as is (True = not allowed); scaled_dot_product_attention needs
    it inverted (True = may attend), which is what to_sdpa_mask does.
    """
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, 4, generator=gen, dtype=torch.float64)
    valid_lens = torch.randint(1, t + 1, (b,), generator=gen)  # at least one key, so no row is empty
    key_padding = al.padding_mask(valid_lens, t)[:, 0]  # (b, t)
    mask = al.causal_mask(t) | key_padding[:, None, :]  # (b, t, t)

    ours = al.masked_softmax(x @ x.transpose(1, 2) / 2.0, mask)  # scale = 1/sqrt(4)

    mha = torch.nn.MultiheadAttention(4, 1, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(4, dtype=torch.float64).repeat(3, 1))
    _, mha_weights = mha(x, x, x, attn_mask=al.causal_mask(t), key_padding_mask=key_padding)
    torch.testing.assert_close(ours, mha_weights)

    # SDPA returns the weighted sum only; with the identity as values it returns the weights.
    eye = torch.eye(t, dtype=torch.float64).expand(b, t, t)
    sdpa_weights = F.scaled_dot_product_attention(x, x, eye, attn_mask=al.to_sdpa_mask(mask), scale=0.5)
    torch.testing.assert_close(ours, sdpa_weights)

    # And the inverted convention really is wrong: passing our mask unchanged to SDPA differs.
    wrong = F.scaled_dot_product_attention(x, x, eye, attn_mask=mask, scale=0.5)
    assert not torch.allclose(wrong, ours)


def test_to_sdpa_mask_inverts() -> None:
    mask = al.causal_mask(3)
    assert torch.equal(al.to_sdpa_mask(mask), torch.ones(3, 3, dtype=torch.bool).tril())
    with pytest.raises(TypeError, match="boolean"):
        al.to_sdpa_mask(mask.float())


def test_masked_softmax_without_mask_is_softmax() -> None:
    scores = torch.randn(3, 5)
    torch.testing.assert_close(al.masked_softmax(scores), torch.softmax(scores, -1))
    torch.testing.assert_close(al.masked_softmax(scores, dim=0), torch.softmax(scores, 0))


@pytest.mark.parametrize(
    ("dtype", "still_positive", "zero"), [(torch.float32, 103.0, 104.5), (torch.float16, 17.0, 17.5)]
)
def test_an_allowed_weight_underflows_where_the_masks_page_says(dtype: torch.dtype, still_positive: float, zero: float):
    """The masks page: zeroing and renormalizing gives nan once a future score leads by about 104 in
    float32 and about 17 in float16, because the allowed key's weight rounds to 0."""
    assert torch.softmax(torch.tensor([0.0, still_positive], dtype=dtype), dim=-1)[0] > 0
    assert torch.softmax(torch.tensor([0.0, zero], dtype=dtype), dim=-1)[0] == 0
    weights = torch.softmax(torch.tensor([0.0, zero], dtype=dtype), dim=-1) * torch.tensor([1.0, 0.0])
    assert (weights / weights.sum()).isnan().all()
    fill = torch.softmax(torch.tensor([0.0, -torch.inf], dtype=dtype), dim=-1)  # the fill-with-−∞ way
    assert fill.tolist() == [1.0, 0.0]


def test_masks_are_built_where_their_input_is_not_on_the_default_device() -> None:
    """Inside ``with torch.device(...)`` (or after torch.set_default_device) new tensors go to that device unless
    told otherwise: a padding mask must still be built where valid_lens is, and a module's causal mask rebuilt
    where its buffer is (refill_causal_mask, which load_state_dict runs). "meta", a device every machine has,
    stands in for a GPU as the default."""
    valid_lens = torch.tensor([2, 0])
    module = al.MultiHeadAttention(3, 4, 5, 0.0, 2)
    state = module.state_dict()
    module.mask.fill_(False)
    with torch.device("meta"):
        mask = al.padding_mask(valid_lens, num_keys=3)
        module.load_state_dict(state)
    assert mask.device == valid_lens.device
    assert mask[:, 0].tolist() == [[False, False, True], [True, True, True]]
    assert torch.equal(module.mask, al.causal_mask(5))


def test_masks_are_built_on_their_inputs_device(device: torch.device) -> None:
    """padding_mask builds on valid_lens' device, and refill_causal_mask refills a module's buffer on its own."""
    for valid_lens, expected in [
        ([2, 0], [[[False, False, True]], [[True, True, True]]]),
        ([[1, 3], [0, 2]], [[[False, True, True], [False, False, False]], [[True, True, True], [False, False, True]]]),
    ]:
        mask = al.padding_mask(torch.tensor(valid_lens, device=device), num_keys=3)
        assert mask.device.type == device.type
        assert mask.tolist() == expected
    module = al.CausalAttention(3, 2, 5, 0.0).to(device)
    module.mask.fill_(False)
    al.refill_causal_mask(module)
    assert module.mask.device.type == device.type
    assert torch.equal(module.mask.cpu(), al.causal_mask(5))


def test_causal_mask_is_built_on_the_device_it_is_given(device: torch.device) -> None:
    """A module builds its mask where its input is (``causal_mask(..., device=x.device)``); "meta" shows it on
    every machine, whatever the default device."""
    for where in (device, torch.device("meta")):
        mask = al.causal_mask(2, 3, where, align="lower_right")
        assert mask.device.type == where.type
        assert mask.shape == (2, 3)
    assert al.causal_mask(2, 3, device, align="lower_right").tolist() == [[False, False, True], [False, False, False]]


def test_valid_lens_may_stay_on_the_cpu_while_the_queries_are_on_device(device: torch.device) -> None:
    """Lengths are often built on the CPU (from a Python list) while the batch is on the GPU: the modules that
    take valid_lens move them to the queries' device, and give what an all-CPU call gives."""
    torch.manual_seed(0)
    queries, keys, values = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    valid_lens = torch.tensor([2, 5])
    attention = al.DotProductAttention(0.0)
    expected = attention(queries, keys, values, valid_lens)
    context_vec = attention(queries.to(device), keys.to(device), values.to(device), valid_lens)
    assert context_vec.device.type == device.type
    torch.testing.assert_close(context_vec.cpu(), expected, atol=1e-5, rtol=1e-4)
    # valid_lens = 2 for the first sequence: its keys 2..4 get no weight.
    assert attention.attention_weights is not None
    assert torch.equal(attention.attention_weights[0, :, 2:].cpu(), torch.zeros(3, 3))


@pytest.mark.parametrize("shape", [(4,), (3, 4), (4, 3), (2, 4, 4)])
def test_refill_causal_mask_refuses_a_mask_that_is_not_square(shape: tuple[int, ...]) -> None:
    """The causal pattern of a module is (context_length, context_length): a buffer of another shape was not
    registered by CausalAttention or MultiHeadAttention, and refilling it would only hide that."""
    module = torch.nn.Module()
    module.register_buffer("mask", torch.zeros(shape, dtype=torch.bool))
    message = f"module.mask must be a square (context_length, context_length) tensor, got shape {shape}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        al.refill_causal_mask(module)
    assert not module.mask.any()
