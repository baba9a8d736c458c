"""What the single-head modules promise that the other tests left open: the sizes they keep as attributes,
the biases ``qkv_bias`` adds, a batch computed as PyTorch's attention computes it, and the input checks that
refuse a wrong size, dtype or device with a message that names the argument (not a shape error from inside a
matrix product). The mask buffer itself is tested in test_modules.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import attention_lib as al

# --- sizes ---------------------------------------------------------------------------------------

SIZES: dict[str, tuple[Callable[[], torch.nn.Module], dict[str, int]]] = {
    "CausalAttention": (lambda: al.CausalAttention(5, 4, 8, 0.0), {"d_in": 5, "d_out": 4, "context_length": 8}),
    "SelfAttentionV1": (lambda: al.SelfAttentionV1(5, 4), {"d_in": 5, "d_out": 4, "d_out_v": 4}),
    "SelfAttentionV1(d_out_v)": (lambda: al.SelfAttentionV1(5, 4, 3), {"d_in": 5, "d_out": 4, "d_out_v": 3}),
    "SelfAttentionV2": (lambda: al.SelfAttentionV2(5, 4), {"d_in": 5, "d_out": 4}),
    "CrossAttention": (lambda: al.CrossAttention(5, 4, 3), {"d_in": 5, "d_out_kq": 4, "d_out_v": 3}),
}


@pytest.mark.parametrize(("make", "sizes"), SIZES.values(), ids=SIZES.keys())
def test_a_module_keeps_its_sizes_as_attributes(make: Callable[[], torch.nn.Module], sizes: dict[str, int]) -> None:
    """Like nn.Linear's in_features and out_features: code that stacks layers sizes the next one from them
    (SelfAttentionV1's d_out_v defaults to d_out)."""
    module = make()
    assert {name: getattr(module, name) for name in sizes} == sizes


# --- biases and the computation on a batch -------------------------------------------------------


def _sdpa_reference(module: torch.nn.Module, x: torch.Tensor, is_causal: bool) -> torch.Tensor:
    """PyTorch's own attention over the module's projections, F.linear with their weights and biases."""
    q, k, v = (F.linear(x, proj.weight, proj.bias) for proj in (module.W_query, module.W_key, module.W_value))
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)


LINEAR_MODULES: dict[str, tuple[Callable[[bool], torch.nn.Module], bool]] = {
    "SelfAttentionV2": (lambda qkv_bias: al.SelfAttentionV2(5, 4, qkv_bias=qkv_bias), False),
    "CausalAttention": (lambda qkv_bias: al.CausalAttention(5, 4, 8, 0.0, qkv_bias=qkv_bias), True),
}


@pytest.mark.parametrize("make", [make for make, _ in LINEAR_MODULES.values()], ids=LINEAR_MODULES.keys())
def test_qkv_bias_gives_each_projection_a_bias_and_none_by_default(make: Callable[[bool], torch.nn.Module]) -> None:
    with_bias, without = make(True), make(False)
    for name in ("W_query", "W_key", "W_value"):
        bias = getattr(with_bias, name).bias
        assert isinstance(bias, torch.nn.Parameter)
        assert bias.shape == (4,)  # d_out
        assert getattr(without, name).bias is None
    assert sum(p.numel() for p in with_bias.parameters()) == sum(p.numel() for p in without.parameters()) + 3 * 4


@pytest.mark.parametrize("qkv_bias", [False, True], ids=["no bias", "qkv_bias"])
@pytest.mark.parametrize(("make", "is_causal"), LINEAR_MODULES.values(), ids=LINEAR_MODULES.keys())
def test_a_batch_is_attended_as_pytorch_attends_it(
    make: Callable[[bool], torch.nn.Module], is_causal: bool, qkv_bias: bool
) -> None:
    """Each sequence of a batch on its own: the softmax runs over the keys of each query, and the scores are
    scaled by sqrt(d_out), the keys' size, not by the number of tokens (6 here, 4 = d_out)."""
    torch.manual_seed(0)
    module = make(qkv_bias).eval()
    x = torch.randn(3, 6, 5)  # (batch, num_tokens, d_in)
    context_vec = module(x)
    assert context_vec.shape == (3, 6, 4)
    torch.testing.assert_close(context_vec, _sdpa_reference(module, x, is_causal))


# --- input checks --------------------------------------------------------------------------------

X = torch.randn(2, 4, 3)  # (batch, num_tokens, d_in=3)
X_5 = torch.randn(2, 4, 5)  # the same with d_in=5

WRONG_SIZE: dict[str, tuple[Callable[[], object], str]] = {
    "CausalAttention": (lambda: al.CausalAttention(5, 4, 6, 0.0)(X), "x"),
    "SelfAttentionV1": (lambda: al.SelfAttentionV1(5, 2)(X), "x"),
    "SelfAttentionV1 unbatched": (lambda: al.SelfAttentionV1(5, 2)(X[0]), "x"),
    "SelfAttentionV2": (lambda: al.SelfAttentionV2(5, 2)(X), "x"),
    "CrossAttention x_1": (lambda: al.CrossAttention(5, 2, 4)(X, X_5), "x_1"),
    "CrossAttention x_1 unbatched": (lambda: al.CrossAttention(5, 2, 4)(X[0], X_5[0]), "x_1"),
    "CrossAttention x_2": (lambda: al.CrossAttention(5, 2, 4)(X_5, X), "x_2"),
}


@pytest.mark.parametrize(("call", "name"), WRONG_SIZE.values(), ids=WRONG_SIZE.keys())
def test_an_input_of_another_size_than_d_in_is_refused_by_name(call: Callable[[], object], name: str) -> None:
    """A ValueError that names the input and d_in, rather than a RuntimeError from inside the projection."""
    with pytest.raises(ValueError, match=rf"^{name} must have size 5 in its last dimension \(d_in\)"):
        call()


WRONG_KIND: dict[str, tuple[Callable[[torch.Tensor], object], str]] = {
    "CausalAttention": (lambda x: al.CausalAttention(3, 4, 6, 0.0)(x), "x"),
    "SelfAttentionV1": (lambda x: al.SelfAttentionV1(3, 2)(x), "x"),
    "SelfAttentionV1 unbatched": (lambda x: al.SelfAttentionV1(3, 2)(x[0]), "x"),
    "SelfAttentionV2": (lambda x: al.SelfAttentionV2(3, 2)(x), "x"),
    "CrossAttention x_1": (lambda x: al.CrossAttention(3, 2, 4)(x, X), "x_1"),
    "CrossAttention x_1 unbatched": (lambda x: al.CrossAttention(3, 2, 4)(x[0], X[0]), "x_1"),
    "CrossAttention x_2": (lambda x: al.CrossAttention(3, 2, 4)(X, x), "x_2"),
}


@pytest.mark.parametrize(("call", "name"), WRONG_KIND.values(), ids=WRONG_KIND.keys())
def test_an_input_of_another_dtype_than_the_weights_is_refused_by_name(
    call: Callable[[torch.Tensor], object], name: str
) -> None:
    """float64 into float32 weights: a TypeError that says how to convert, before any product fails."""
    with pytest.raises(TypeError, match=rf"^{name} must have the dtype of the module's weights, torch.float32"):
        call(X.double())


@pytest.mark.parametrize(("call", "name"), WRONG_KIND.values(), ids=WRONG_KIND.keys())
def test_an_input_on_another_device_than_the_weights_is_refused_by_name(
    call: Callable[[torch.Tensor], object], name: str
) -> None:
    """ "meta", a device every machine has, stands for a CUDA input into a module left on the CPU."""
    with pytest.raises(ValueError, match=rf"^{name} must be on the device of the module's weights, cpu, got meta"):
        call(X.to("meta"))
