"""GroupedQueryAttention: the book's module, PyTorch's ``enable_gqa``, and what the wrong repeat does.

References, written from PyTorch primitives only:
* ``F.scaled_dot_product_attention(..., enable_gqa=True)`` on the module's projections (torch 2.5+);
* an explicit reference that repeats each key/value head with ``repeat_interleave``;
* ``MultiHeadAttention`` with the same weights, when every query head has its own key/value head.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al
from attention_lib.grouped_query import SDPA_HAS_GQA

TOL = {torch.float64: {"atol": 1e-12, "rtol": 1e-10}, torch.float32: {"atol": 1e-5, "rtol": 1e-4}}


@dataclass
class Case:
    batch: int
    num_tokens: int
    d_in: int
    num_heads: int
    num_kv_groups: int
    head_dim: int
    qkv_bias: bool
    seed: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    num_heads = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    return Case(
        batch=draw(st.integers(1, 3)),
        num_tokens=draw(st.integers(1, 9)),
        d_in=draw(st.integers(1, 7)),
        num_heads=num_heads,
        num_kv_groups=draw(st.sampled_from([g for g in range(1, num_heads + 1) if num_heads % g == 0])),
        head_dim=draw(st.integers(1, 5)),
        qkv_bias=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


def make(case: Case, dtype: torch.dtype, use_sdpa: bool) -> tuple[al.GroupedQueryAttention, torch.Tensor]:
    torch.manual_seed(case.seed)
    d_out = case.num_heads * case.head_dim
    gqa = al.GroupedQueryAttention(
        case.d_in, d_out, 0.0, case.num_heads, case.num_kv_groups, dtype=dtype, qkv_bias=case.qkv_bias,
        use_sdpa=use_sdpa,
    )  # fmt: skip
    x = torch.randn(case.batch, case.num_tokens, case.d_in, dtype=dtype)
    return gqa.eval(), x


def project(x: torch.Tensor, layer: torch.nn.Linear, heads: int) -> torch.Tensor:
    """(b, t, d_in) -> (b, heads, t, head_dim), with reshape and permute rather than the library's helpers."""
    b, t, _ = x.shape
    return F.linear(x, layer.weight, layer.bias).reshape(b, t, heads, -1).permute(0, 2, 1, 3)


def explicit_reference(
    gqa: al.GroupedQueryAttention, x: torch.Tensor, repeat: str = "repeat_interleave"
) -> torch.Tensor:
    b, t, _ = x.shape
    q = project(x, gqa.W_query, gqa.num_heads)
    k, v = project(x, gqa.W_key, gqa.num_kv_groups), project(x, gqa.W_value, gqa.num_kv_groups)
    if repeat == "repeat_interleave":
        k, v = k.repeat_interleave(gqa.group_size, dim=1), v.repeat_interleave(gqa.group_size, dim=1)
    else:  # the wrong one: [K0, K1] -> [K0, K1, K0, K1]
        k, v = k.repeat(1, gqa.group_size, 1, 1), v.repeat(1, gqa.group_size, 1, 1)
    scores = q @ k.transpose(-2, -1) / gqa.head_dim**0.5
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # (b, h, t, head_dim)
    return F.linear(out.permute(0, 2, 1, 3).reshape(b, t, -1), gqa.out_proj.weight)


@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(case=cases())
def test_matches_the_repeat_interleave_reference(case: Case, dtype: torch.dtype, use_sdpa: bool) -> None:
    gqa, x = make(case, dtype, use_sdpa)
    torch.testing.assert_close(gqa(x), explicit_reference(gqa, x), **TOL[dtype])


@pytest.mark.skipif(not SDPA_HAS_GQA, reason="scaled_dot_product_attention has enable_gqa from torch 2.5")
@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
@given(case=cases())
def test_matches_sdpa_enable_gqa_forward_and_backward(case: Case, use_sdpa: bool) -> None:
    gqa, x = make(case, torch.float64, use_sdpa)
    x.requires_grad_()
    ours = gqa(x)
    q = project(x, gqa.W_query, gqa.num_heads)
    k, v = project(x, gqa.W_key, gqa.num_kv_groups), project(x, gqa.W_value, gqa.num_kv_groups)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    reference = F.linear(out.permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[1], -1), gqa.out_proj.weight)
    torch.testing.assert_close(ours, reference, **TOL[torch.float64])
    grad = torch.randn_like(ours)
    (ours_grad,) = torch.autograd.grad(ours, x, grad)
    (reference_grad,) = torch.autograd.grad(reference, x, grad)
    torch.testing.assert_close(ours_grad, reference_grad, **TOL[torch.float64])


def test_repeat_instead_of_repeat_interleave_pairs_the_wrong_heads() -> None:
    """With 2 key/value heads for 4 query heads, ``.repeat`` gives query head 1 key/value head 1 instead of 0."""
    case = Case(batch=1, num_tokens=5, d_in=8, num_heads=4, num_kv_groups=2, head_dim=4, qkv_bias=False, seed=0)
    gqa, x = make(case, torch.float64, use_sdpa=False)
    right, wrong = explicit_reference(gqa, x), explicit_reference(gqa, x, repeat="repeat")
    torch.testing.assert_close(gqa(x), right, **TOL[torch.float64])
    assert not torch.allclose(wrong, right, atol=1e-3)
    # The two agree exactly when there is nothing to mix up: one key/value head, or one per query head.
    for groups in (1, 4):
        gqa, x = make(Case(1, 5, 8, 4, groups, 4, False, 0), torch.float64, use_sdpa=False)
        torch.testing.assert_close(explicit_reference(gqa, x, repeat="repeat"), explicit_reference(gqa, x))


def test_same_seed_same_module_as_the_book_order() -> None:
    """The parameters are created W_key, W_value, W_query, out_proj (no bias), as in the book's GQA code."""
    torch.manual_seed(123)
    book_order = [
        torch.nn.Linear(12, 2 * 4, bias=False),  # W_key: num_kv_groups * head_dim
        torch.nn.Linear(12, 2 * 4, bias=False),  # W_value
        torch.nn.Linear(12, 16, bias=False),  # W_query
        torch.nn.Linear(16, 16, bias=False),  # out_proj
    ]
    torch.manual_seed(123)
    gqa = al.GroupedQueryAttention(d_in=12, d_out=16, dropout=0.0, num_heads=4, num_kv_groups=2)
    ours = [gqa.W_key, gqa.W_value, gqa.W_query, gqa.out_proj]
    for book_layer, our_layer in zip(book_order, ours, strict=True):
        assert torch.equal(book_layer.weight, our_layer.weight)
        assert our_layer.bias is None
    assert list(gqa.state_dict()) == ["W_key.weight", "W_value.weight", "W_query.weight", "out_proj.weight"]


def test_one_kv_head_per_query_head_is_multi_head_attention() -> None:
    torch.manual_seed(0)
    gqa = al.GroupedQueryAttention(6, 8, 0.0, num_heads=4, num_kv_groups=4, qkv_bias=True).double().eval()
    mha = al.MultiHeadAttention(6, 8, 10, 0.0, num_heads=4, qkv_bias=True).double().eval()
    mha.load_state_dict({**gqa.state_dict(), "out_proj.bias": torch.zeros(8, dtype=torch.float64)})
    x = torch.randn(2, 10, 6, dtype=torch.float64)
    torch.testing.assert_close(gqa(x), mha(x), **TOL[torch.float64])


def test_parameter_and_cache_sizes() -> None:
    """MQA and GQA shrink W_key, W_value and the cache by num_heads / num_kv_groups."""
    sizes = {}
    for groups in (12, 4, 1):
        gqa = al.GroupedQueryAttention(768, 768, 0.0, num_heads=12, num_kv_groups=groups)
        gqa(torch.randn(1, 3, 768), use_cache=True)
        assert gqa.W_key.weight.shape == gqa.W_value.weight.shape == (groups * 64, 768)
        assert gqa.cache_k.shape == gqa.cache_v.shape == (1, groups, 3, 64)
        sizes[groups] = gqa.cache_k.nbytes + gqa.cache_v.nbytes
    assert sizes == {12: 2 * 12 * 3 * 64 * 4, 4: 2 * 4 * 3 * 64 * 4, 1: 2 * 1 * 3 * 64 * 4}


def test_dropout_is_used_in_training_on_both_paths() -> None:
    x = torch.randn(2, 6, 8)
    for use_sdpa in (True, False):
        gqa = al.GroupedQueryAttention(8, 8, 0.5, 4, 2, use_sdpa=use_sdpa)
        assert not torch.equal(gqa.train()(x), gqa.eval()(x))
        assert torch.equal(gqa.eval()(x), gqa.eval()(x))


def test_paths_agree_on_device(device: torch.device) -> None:
    """float16 on CUDA, where the fused kernels take it; float32 on the CPU."""
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    gqa = al.GroupedQueryAttention(64, 64, 0.0, num_heads=8, num_kv_groups=2).to(device, dtype).eval()
    x = torch.randn(2, 33, 64, device=device, dtype=dtype)
    fast = gqa(x)
    gqa.use_sdpa = False
    tolerance = {"atol": 2e-3, "rtol": 2e-3} if dtype == torch.float16 else TOL[torch.float32]
    torch.testing.assert_close(fast, gqa(x), **tolerance)


def test_the_module_records_its_sizes() -> None:
    """d_in, d_out and the head counts a caller reads back (e.g. to build the next layer), as passed in."""
    gqa = al.GroupedQueryAttention(6, 12, 0.0, num_heads=4, num_kv_groups=2)
    assert (gqa.d_in, gqa.d_out, gqa.num_heads, gqa.num_kv_groups) == (6, 12, 4, 2)
    assert (gqa.head_dim, gqa.group_size) == (3, 2)


@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
def test_an_input_of_the_wrong_width_is_refused_by_name(use_sdpa: bool) -> None:
    """x's last dimension must be d_in: the check names it, where the projection would fail with a matmul error."""
    gqa = al.GroupedQueryAttention(6, 8, 0.0, num_heads=4, num_kv_groups=2, use_sdpa=use_sdpa)
    with pytest.raises(ValueError, match=r"x must have size 6 in its last dimension \(d_in\), got shape \(1, 3, 5\)"):
        gqa(torch.randn(1, 3, 5))
    assert gqa(torch.randn(1, 3, 6)).shape == (1, 3, 8)


@pytest.mark.skipif(not SDPA_HAS_GQA, reason="scaled_dot_product_attention has enable_gqa from torch 2.5")
def test_the_default_takes_the_fast_path(sdpa_calls: list[dict]) -> None:
    """Without use_sdpa the module calls scaled_dot_product_attention (enable_gqa, is_causal, no mask);
    with use_sdpa=False it never does, and the two agree."""
    torch.manual_seed(0)
    gqa = al.GroupedQueryAttention(6, 8, 0.0, num_heads=4, num_kv_groups=2).double().eval()
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    assert gqa.use_sdpa is True
    fast = gqa(x)
    assert len(sdpa_calls) == 1
    assert sdpa_calls[0]["enable_gqa"] is True
    assert sdpa_calls[0]["is_causal"] is True
    assert sdpa_calls[0]["attn_mask"] is None
    gqa.use_sdpa = False
    torch.testing.assert_close(gqa(x), fast, **TOL[torch.float64])
    assert len(sdpa_calls) == 1


@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
@pytest.mark.parametrize("num_past", [1, 2])
def test_a_chunk_after_the_cache_sees_no_later_token(device: torch.device, num_past: int, use_sdpa: bool) -> None:
    """A chunk of 3 tokens after 1 or 2 cached ones gives the last 3 rows of one forward of the whole sequence:
    its causal mask, aligned bottom-right, is built on x's device. (The fast path gets it as attn_mask, since
    is_causal would align it top-left.)"""
    torch.manual_seed(0)
    gqa = al.GroupedQueryAttention(6, 8, 0.0, 4, 2, use_sdpa=use_sdpa).to(device, torch.float64).eval()
    x = torch.randn(2, num_past + 3, 6, dtype=torch.float64, device=device)
    whole = gqa(x)
    gqa(x[:, :num_past], use_cache=True)
    chunk = gqa(x[:, num_past:], use_cache=True)
    torch.testing.assert_close(chunk, whole[:, num_past:], **TOL[torch.float64])


@pytest.mark.skipif(not SDPA_HAS_GQA, reason="scaled_dot_product_attention has enable_gqa from torch 2.5")
def test_the_fast_path_masks_a_chunk_after_one_cached_token(sdpa_calls: list[dict]) -> None:
    """After one cached token, a chunk of 2 goes to scaled_dot_product_attention with the bottom-right mask
    (query 0 sees keys 0..1, query 1 sees keys 0..2); one new token after it needs none, and gets none."""
    gqa = al.GroupedQueryAttention(6, 8, 0.0, 4, 2).eval()
    x = torch.randn(1, 4, 6)
    gqa(x[:, :1], use_cache=True)
    gqa(x[:, 1:3], use_cache=True)
    gqa(x[:, 3:], use_cache=True)
    may_attend = torch.tensor([[True, True, False], [True, True, True]])
    assert [call["is_causal"] for call in sdpa_calls] == [True, False, False]
    assert torch.equal(sdpa_calls[1]["attn_mask"], may_attend)
    assert sdpa_calls[2]["attn_mask"] is None
