"""MultiHeadAttention agrees with PyTorch's own attention, forward and backward, over many shapes.

References:
* ``torch.nn.MultiheadAttention`` with our weights copied in (it needs ``d_in == d_out``);
* a reference built from ``F.linear`` and ``F.scaled_dot_product_attention`` directly, which allows
  ``d_in != d_out`` (the case that hides bugs when every test uses equal sizes).
Both of our paths (fast SDPA and explicit) are compared with both references.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al

TOL = {torch.float64: {"atol": 1e-12, "rtol": 1e-10}, torch.float32: {"atol": 1e-5, "rtol": 1e-4}}
# bfloat16 keeps 8 significant bits (machine epsilon 2**-7 = 0.0078); a few roundings through the
# projections and the softmax stay within 4 epsilons of the float64 result at these sizes.
BF16_TOL = {"atol": 4 * 2**-7, "rtol": 4 * 2**-7}


@dataclass
class Case:
    batch: int
    num_tokens: int
    d_in: int
    num_heads: int
    head_dim: int
    qkv_bias: bool
    padded: bool
    seed: int

    @property
    def d_out(self) -> int:
        return self.num_heads * self.head_dim


cases = st.builds(
    Case,
    batch=st.integers(1, 3),
    num_tokens=st.integers(1, 9),
    d_in=st.integers(1, 10),
    num_heads=st.integers(1, 8),
    head_dim=st.integers(1, 4),
    qkv_bias=st.booleans(),
    padded=st.booleans(),
    seed=st.integers(0, 2**16),
)


def make(
    case: Case, dtype: torch.dtype, d_in: int | None = None
) -> tuple[al.MultiHeadAttention, torch.Tensor, torch.Tensor | None]:
    """A seeded module (eval mode), an input and a right-padding mask (every query keeps key 0)."""
    torch.manual_seed(case.seed)
    d_in = case.d_in if d_in is None else d_in
    mha = al.MultiHeadAttention(d_in, case.d_out, case.num_tokens + 2, 0.0, case.num_heads, case.qkv_bias)
    mha = mha.to(dtype).eval()
    with torch.no_grad():  # nn.Linear's default bias is tiny; make the biases matter
        for layer in (mha.W_query, mha.W_key, mha.W_value, mha.out_proj):
            if layer.bias is not None:
                layer.bias.normal_()
    x = torch.randn(case.batch, case.num_tokens, d_in, dtype=dtype)
    key_padding_mask = None
    if case.padded:
        valid_lens = torch.randint(1, case.num_tokens + 1, (case.batch,))
        key_padding_mask = al.padding_mask(valid_lens, case.num_tokens)[:, 0]  # (b, t), True = padding
    return mha, x, key_padding_mask


def run_ours(mha: al.MultiHeadAttention, x: torch.Tensor, kpm: torch.Tensor | None, path: str) -> torch.Tensor:
    mha.use_sdpa = path == "sdpa"
    if path == "weights":
        out, _ = mha(x, key_padding_mask=kpm, need_weights=True)
        return out
    return mha(x, key_padding_mask=kpm)


def torch_mha_copy(mha: al.MultiHeadAttention) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(mha.d_out, mha.num_heads, batch_first=True, dtype=mha.out_proj.weight.dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
        if mha.W_query.bias is None:
            ref.in_proj_bias.zero_()
        else:
            ref.in_proj_bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]))
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref.eval()


def sdpa_reference(mha: al.MultiHeadAttention, x: torch.Tensor, kpm: torch.Tensor | None) -> torch.Tensor:
    """Written from PyTorch primitives only, independently of attention_lib's helpers."""
    b, t, _ = x.shape
    h, hd = mha.num_heads, mha.head_dim

    def project(layer: torch.nn.Linear) -> torch.Tensor:
        return F.linear(x, layer.weight, layer.bias).reshape(b, t, h, hd).permute(0, 2, 1, 3)

    allowed = torch.ones(t, t, dtype=torch.bool).tril()  # True = may attend
    if kpm is not None:
        allowed = allowed & ~kpm[:, None, None, :]
    out = F.scaled_dot_product_attention(
        project(mha.W_query), project(mha.W_key), project(mha.W_value), attn_mask=allowed
    )
    return F.linear(out.permute(0, 2, 1, 3).reshape(b, t, h * hd), mha.out_proj.weight, mha.out_proj.bias)


PATHS = ["sdpa", "explicit", "weights"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(case=cases)
def test_matches_torch_multihead_attention(case: Case, dtype: torch.dtype, path: str) -> None:
    mha, x, kpm = make(case, dtype, d_in=case.d_out)  # nn.MultiheadAttention needs d_in == d_out
    ref = torch_mha_copy(mha)
    with torch.no_grad():
        expected, expected_weights = ref(
            x, x, x, attn_mask=al.causal_mask(case.num_tokens), key_padding_mask=kpm, average_attn_weights=False
        )
        torch.testing.assert_close(run_ours(mha, x, kpm, path), expected, **TOL[dtype])
        _, weights = mha(x, key_padding_mask=kpm, need_weights=True)
        torch.testing.assert_close(weights, expected_weights, **TOL[dtype])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(case=cases)
def test_matches_sdpa_reference_forward_and_backward(case: Case, dtype: torch.dtype, path: str) -> None:
    mha, x, kpm = make(case, dtype)
    x_ours, x_ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = run_ours(mha, x_ours, kpm, path)
    params = list(mha.parameters())
    grad_out = torch.randn_like(out)
    grads = torch.autograd.grad(out, [x_ours, *params], grad_out)
    expected = sdpa_reference(mha, x_ref, kpm)
    expected_grads = torch.autograd.grad(expected, [x_ref, *params], grad_out)
    torch.testing.assert_close(out, expected, **TOL[dtype])
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, **TOL[dtype])


@pytest.mark.parametrize("path", PATHS)
@given(case=cases)
def test_bfloat16_within_stated_tolerance(case: Case, path: str) -> None:
    mha, x, kpm = make(case, torch.float64)
    expected = sdpa_reference(mha, x, kpm)
    out = run_ours(mha.to(torch.bfloat16), x.to(torch.bfloat16), kpm, path)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), expected, **BF16_TOL)


def test_fully_masked_queries_agree_on_both_paths(device: torch.device) -> None:
    """Left padding hides every key from the first query: zeros on both paths, never nan."""
    torch.manual_seed(0)
    mha = al.MultiHeadAttention(4, 6, 5, 0.0, num_heads=3).to(device).eval()
    x = torch.randn(2, 5, 4, device=device)
    kpm = torch.tensor([[True, True, False, False, False], [False] * 5], device=device)
    fast = mha(x, key_padding_mask=kpm)
    explicit, weights = mha(x, key_padding_mask=kpm, need_weights=True)
    assert not fast.isnan().any()
    torch.testing.assert_close(fast, explicit)
    assert torch.equal(weights[0, :, :2], torch.zeros_like(weights[0, :, :2]))
    # A query with nothing to attend to gets a zero context vector; out_proj then adds its bias.
    torch.testing.assert_close(fast[0, :2], mha.out_proj.bias.expand(2, 6))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_paths_agree_on_device(device: torch.device, dtype: torch.dtype) -> None:
    torch.manual_seed(1)
    mha = al.MultiHeadAttention(10, 12, 16, 0.0, num_heads=4, qkv_bias=True).to(device, dtype).eval()
    x = torch.randn(3, 11, 10, device=device, dtype=dtype)
    kpm = al.padding_mask(torch.tensor([11, 7, 1], device=device), 11)[:, 0]
    for mask in (None, kpm):
        fast = mha(x, key_padding_mask=mask)
        explicit, _ = mha(x, key_padding_mask=mask, need_weights=True)
        # CUDA kernels (TF32, fused softmax) round differently from the CPU; the bound is still tight.
        tolerance = TOL[dtype] if device.type == "cpu" else {"atol": 1e-3, "rtol": 1e-3}
        torch.testing.assert_close(fast, explicit, **tolerance)
