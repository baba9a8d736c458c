"""Module properties: causality, weight rows, gradients, buffers, and each projection on its own input."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
import torch
from torch.func import functional_call

import attention_lib as al


def causal_modules() -> dict[str, Callable[[], torch.nn.Module]]:
    return {
        "CausalAttention": lambda: al.CausalAttention(5, 4, 8, 0.0),
        "MultiHeadAttentionWrapper": lambda: al.MultiHeadAttentionWrapper(5, 2, 8, 0.0, num_heads=3),
        "MultiHeadAttention(sdpa)": lambda: al.MultiHeadAttention(5, 6, 8, 0.0, num_heads=3),
        "MultiHeadAttention(explicit)": lambda: al.MultiHeadAttention(5, 6, 8, 0.0, num_heads=3, use_sdpa=False),
    }


@pytest.mark.parametrize("make", causal_modules().values(), ids=causal_modules().keys())
def test_changing_a_future_token_never_changes_earlier_outputs(make: Callable[[], torch.nn.Module]) -> None:
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(2, 7, 5)
    out = module(x)
    for position in range(7):
        changed = x.clone()
        changed[:, position] += 10 * torch.randn(2, 5)
        new_out = module(changed)
        torch.testing.assert_close(new_out[:, :position], out[:, :position], atol=1e-6, rtol=0)
        assert not torch.allclose(new_out[:, position:], out[:, position:])  # the test can see a change


def test_attention_weight_rows_sum_to_one_and_masked_are_exactly_zero() -> None:
    torch.manual_seed(0)
    mha = al.MultiHeadAttention(4, 8, 9, 0.0, num_heads=2).eval()
    kpm = al.padding_mask(torch.tensor([9, 5, 3]), 9)[:, 0]
    _, weights = mha(torch.randn(3, 9, 4), key_padding_mask=kpm, need_weights=True)
    assert weights.shape == (3, 2, 9, 9)
    mask = (al.causal_mask(9) | kpm[:, None, None, :]).expand_as(weights)
    assert torch.equal(weights[mask], torch.zeros_like(weights[mask]))
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 9))

    attention = al.DotProductAttention(0.0)
    attention(torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2), torch.tensor([[1, 2, 5], [4, 4, 3]]))
    weights = attention.attention_weights
    assert weights is not None
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3))
    assert torch.equal(weights[0, 0, 1:], torch.zeros(4))
    assert torch.equal(weights[1, 2, 3:], torch.zeros(2))


def test_valid_length_zero_gives_zero_context() -> None:
    attention = al.AdditiveAttention(2, 3, 4, 0.0)
    out = attention(torch.randn(2, 1, 3), torch.randn(2, 4, 2), torch.randn(2, 4, 5), torch.tensor([0, 2]))
    assert torch.equal(out[0], torch.zeros(1, 5))
    assert not out.isnan().any()


def gradcheck_module(module: torch.nn.Module, *inputs: torch.Tensor, **kwargs: object) -> None:
    """gradcheck with respect to the inputs *and* every parameter of the module."""
    module = module.double()
    names = [name for name, _ in module.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in module.parameters()]
    # Only floating inputs are perturbed; valid lengths stay integer.
    inputs = tuple(x.double().requires_grad_() if x.is_floating_point() else x for x in inputs)

    def fn(*args: torch.Tensor) -> torch.Tensor:
        out = functional_call(module, dict(zip(names, args[len(inputs) :], strict=True)), args[: len(inputs)], kwargs)
        return out[0] if isinstance(out, tuple) else out

    assert torch.autograd.gradcheck(fn, (*inputs, *params))


def gradcheck_cases() -> dict[str, Callable[[], None]]:
    torch.manual_seed(0)
    x = torch.randn(2, 4, 3)
    kpm = torch.tensor([[False, False, True, True], [False] * 4])
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    lens = torch.tensor([2, 5])
    return {
        "SelfAttentionV1": lambda: gradcheck_module(al.SelfAttentionV1(3, 2, 4), x),
        "SelfAttentionV2": lambda: gradcheck_module(al.SelfAttentionV2(3, 2, qkv_bias=True), x),
        "CausalAttention": lambda: gradcheck_module(al.CausalAttention(3, 2, 4, 0.0, qkv_bias=True), x),
        "MultiHeadAttention(sdpa)": lambda: gradcheck_module(
            al.MultiHeadAttention(3, 4, 4, 0.0, 2), x, key_padding_mask=kpm
        ),
        "MultiHeadAttention(explicit)": lambda: gradcheck_module(
            al.MultiHeadAttention(3, 4, 4, 0.0, 2), x, key_padding_mask=kpm, need_weights=True
        ),
        "GroupedQueryAttention(sdpa)": lambda: gradcheck_module(al.GroupedQueryAttention(3, 8, 0.0, 4, 2), x),
        "GroupedQueryAttention(explicit)": lambda: gradcheck_module(
            al.GroupedQueryAttention(3, 8, 0.0, 4, 2, qkv_bias=True, use_sdpa=False), x
        ),
        "CrossAttention": lambda: gradcheck_module(al.CrossAttention(3, 2, 4), x, torch.randn(2, 6, 3)),
        "DotProductAttention": lambda: gradcheck_module(al.DotProductAttention(0.0), q, k, v, lens),
        "AdditiveAttention": lambda: gradcheck_module(al.AdditiveAttention(4, 4, 3, 0.0), q, k, v, lens),
        "GeneralMultiHeadAttention": lambda: gradcheck_module(
            al.GeneralMultiHeadAttention(4, 4, 2, 6, 2, 0.0, bias=True), q, k, v, lens
        ),
    }


@pytest.mark.parametrize("check", gradcheck_cases().values(), ids=gradcheck_cases().keys())
def test_gradcheck(check: Callable[[], None]) -> None:
    check()


def test_gradcheck_masked_softmax() -> None:
    scores = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False, True, False, False], [True, True, True, True], [False, False, False, True]])
    assert torch.autograd.gradcheck(lambda s: al.masked_softmax(s, mask), (scores,))


# --- buffers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [al.CausalAttention, al.MultiHeadAttention])
def test_mask_is_a_non_persistent_boolean_buffer(cls: type) -> None:
    module = cls(4, 4, 6, 0.0, 2) if cls is al.MultiHeadAttention else cls(4, 4, 6, 0.0)
    assert "mask" in dict(module.named_buffers())
    assert "mask" not in module.state_dict()  # deliberate: it is a function of context_length
    assert module.mask.dtype == torch.bool
    assert not any(p is module.mask for p in module.parameters())


def test_mask_follows_to_device_and_stays_boolean_on_to_dtype() -> None:
    module = al.MultiHeadAttention(4, 4, 6, 0.0, 2)
    module.to(torch.float64)
    assert module.W_query.weight.dtype == torch.float64
    assert module.mask.dtype == torch.bool  # .to(dtype) converts floating tensors only
    module(torch.randn(1, 6, 4, dtype=torch.float64))
    module.to("meta")  # a device every machine has: the buffer moves with the module
    assert module.mask.device.type == "meta"
    assert module.W_query.weight.device.type == "meta"


def test_module_runs_on_device(device: torch.device) -> None:
    torch.manual_seed(0)
    module = al.CausalAttention(3, 2, 6, 0.0)
    expected = module(al.journey_inputs()[None])
    module.to(device)
    assert module.mask.device.type == torch.device(device).type
    out = module(al.journey_inputs()[None].to(device))
    torch.testing.assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("cls", [al.CausalAttention, al.MultiHeadAttention])
def test_state_dict_round_trip(cls: type) -> None:
    args = (3, 4, 6, 0.0, 2) if cls is al.MultiHeadAttention else (3, 4, 6, 0.0)
    torch.manual_seed(1)
    saved = cls(*args)
    buffer = io.BytesIO()
    torch.save(saved.state_dict(), buffer)
    torch.manual_seed(2)
    loaded = cls(*args)
    x = torch.randn(2, 6, 3)
    assert not torch.allclose(loaded(x), saved(x))
    buffer.seek(0)
    result = loaded.load_state_dict(torch.load(buffer, weights_only=True), strict=True)
    assert not result.missing_keys
    assert not result.unexpected_keys
    assert torch.equal(loaded(x), saved(x))


MASKED_MODULES = {
    "CausalAttention": lambda: al.CausalAttention(3, 4, 6, 0.0),
    "MultiHeadAttention": lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2),
}


def _outputs(module: torch.nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Every path that reads the mask: the explicit one, and for MultiHeadAttention SDPA with padding."""
    if not isinstance(module, al.MultiHeadAttention):
        return [module(x)]
    padding = torch.tensor([[False] * 5 + [True], [False] * 6])
    return [module(x, need_weights=True)[0], module(x, key_padding_mask=padding)]


@pytest.mark.parametrize("make", MASKED_MODULES.values(), ids=MASKED_MODULES.keys())
@pytest.mark.parametrize("garbage", [None, True, False], ids=["to_empty", "all-True", "all-False"])
def test_a_module_built_on_meta_gets_its_mask_back_from_a_load(make, garbage: bool | None) -> None:
    """meta -> to_empty() -> load_state_dict(): the mask is in no state dict, so the load must rebuild it.
    Besides the memory to_empty() leaves, two fillings make the test independent of that memory."""
    torch.manual_seed(3)
    reference = make().eval()
    with torch.device("meta"):
        module = make()
    module = module.to_empty(device="cpu").eval()
    if garbage is not None:
        module.mask.fill_(garbage)
    result = module.load_state_dict(reference.state_dict(), strict=True)
    assert not result.missing_keys
    assert not result.unexpected_keys
    assert torch.equal(module.mask, al.causal_mask(6))
    x = torch.randn(2, 6, 3)
    for ours, theirs in zip(_outputs(module, x), _outputs(reference, x), strict=True):
        torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("make", MASKED_MODULES.values(), ids=MASKED_MODULES.keys())
def test_reset_parameters_initializes_a_module_built_on_meta(make) -> None:
    with torch.device("meta"):
        module = make()
    module = module.to_empty(device="cpu")
    module.mask.fill_(False)
    module.reset_parameters()
    assert torch.equal(module.mask, al.causal_mask(6))
    assert all(param.abs().max() < 1 for param in module.parameters())  # nn.Linear's uniform init, no garbage
    first = [param.clone() for param in module.parameters()]
    module.reset_parameters()
    assert all(not torch.equal(a, b) for a, b in zip(first, module.parameters(), strict=True))


@pytest.mark.parametrize("make", MASKED_MODULES.values(), ids=MASKED_MODULES.keys())
def test_the_mask_comes_back_after_a_load_in_a_parent_and_in_a_pickled_copy(make) -> None:
    """The hook runs for a submodule when the parent loads, and survives torch.save of the whole module."""
    reference = torch.nn.Sequential(make())
    whole = io.BytesIO()
    torch.save(torch.nn.Sequential(make()), whole)
    whole.seek(0)
    parent = torch.load(whole, weights_only=False)
    parent[0].mask.fill_(True)
    parent.load_state_dict(reference.state_dict())
    assert torch.equal(parent[0].mask, al.causal_mask(6))


# --- dropout -------------------------------------------------------------------------------------


def test_dropout_scales_survivors_and_is_off_in_eval() -> None:
    torch.manual_seed(0)
    attention = al.DotProductAttention(dropout=0.5)
    q, k, v = torch.randn(1, 200, 4), torch.randn(1, 200, 4), torch.eye(200)[None]
    out = attention(q, k, v)  # with the identity as values, the output is the dropped-out weights
    weights = attention.attention_weights
    assert weights is not None
    kept = out != 0
    assert 0.4 < kept.float().mean() < 0.6
    torch.testing.assert_close(out[kept], weights[kept] / (1 - 0.5))  # 1/(1-p), not 1/p
    attention.eval()
    torch.testing.assert_close(attention(q, k, v), attention.attention_weights)


def test_mha_dropout_is_used_in_training_on_both_paths() -> None:
    for use_sdpa in (True, False):
        torch.manual_seed(0)
        mha = al.MultiHeadAttention(4, 4, 16, 0.5, 2, use_sdpa=use_sdpa)
        x = torch.randn(2, 16, 4)
        assert not torch.allclose(mha(x), mha(x))
        mha.eval()
        assert torch.equal(mha(x), mha(x))


# --- the D2L family: each projection on its own input ---------------------------------------------


def d2l_reference(mha: al.GeneralMultiHeadAttention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Multi-head attention written out per head, each projection applied to its own input."""
    queries, keys, values = mha.W_q(q), mha.W_k(k), mha.W_v(v)
    head_dim = queries.shape[-1] // mha.num_heads
    heads = []
    for h in range(mha.num_heads):
        cols = slice(h * head_dim, (h + 1) * head_dim)
        scores = queries[..., cols] @ keys[..., cols].transpose(1, 2) / head_dim**0.5
        heads.append(torch.softmax(scores, -1) @ values[..., cols])
    return mha.W_o(torch.cat(heads, -1))


class KeysWithQueryWeights(al.GeneralMultiHeadAttention):
    """The widely copied bug: keys and values projected with the query weights."""

    def forward(self, queries, keys, values, valid_lens=None):  # type: ignore[override]
        W_k, W_v = self.W_k, self.W_v
        self.W_k = self.W_v = self.W_q
        try:
            return super().forward(queries, keys, values, valid_lens)
        finally:
            self.W_k, self.W_v = W_k, W_v


def test_each_projection_is_used_for_its_own_input() -> None:
    torch.manual_seed(0)
    # Equal input sizes, so a mix-up would not fail on shapes and must be caught by the values.
    mha = al.GeneralMultiHeadAttention(8, 8, 8, 12, num_heads=3, dropout=0.0, bias=True)
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    expected = d2l_reference(mha, q, k, v)
    torch.testing.assert_close(mha(q, k, v), expected)

    buggy = KeysWithQueryWeights(8, 8, 8, 12, num_heads=3, dropout=0.0, bias=True)
    buggy.load_state_dict(mha.state_dict())
    assert not torch.allclose(buggy(q, k, v), expected, atol=1e-3)  # the comparison above would catch it


def test_different_sizes_for_queries_keys_values() -> None:
    mha = al.GeneralMultiHeadAttention(key_size=3, query_size=5, value_size=7, num_hiddens=8, num_heads=2, dropout=0.0)
    out = mha(
        torch.randn(2, 4, 5), torch.randn(2, 6, 3), torch.randn(2, 6, 7), torch.tensor([[1, 2, 3, 6], [6, 5, 4, 3]])
    )
    assert out.shape == (2, 4, 8)
    assert mha.attention_weights is not None
    assert torch.equal(mha.attention_weights[0, 0, 1:], torch.zeros(5))  # head 0 of sequence 0, valid length 1
    assert torch.equal(mha.attention_weights[1, 0, 1:], torch.zeros(5))  # head 1 of sequence 0 too


def test_cross_attention_equals_self_attention_when_inputs_match() -> None:
    torch.manual_seed(0)
    cross = al.CrossAttention(3, 2, 4)
    torch.manual_seed(0)
    self_attn = al.SelfAttentionV1(3, 2, 4)
    x = torch.randn(2, 5, 3)
    torch.testing.assert_close(cross(x, x), self_attn(x))
    assert cross(x, torch.randn(2, 9, 3)).shape == (2, 5, 4)


def test_v1_equals_v2_with_transposed_weights() -> None:
    torch.manual_seed(0)
    v2 = al.SelfAttentionV2(3, 2)
    v1 = al.SelfAttentionV1(3, 2)
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    x = al.journey_inputs()
    torch.testing.assert_close(v1(x), v2(x))


def test_wrapper_heads_are_causal_attention_heads() -> None:
    torch.manual_seed(0)
    wrapper = al.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3)
    x = torch.randn(2, 6, 3)
    out = wrapper(x)
    for h, head in enumerate(wrapper.heads):
        torch.testing.assert_close(out[..., 2 * h : 2 * h + 2], head(x))


def test_the_fast_path_builds_a_mask_only_for_padding(sdpa_calls: list[dict]) -> None:
    """The docstring's promise: is_causal and no mask without padding; with padding, a (b, 1, t, t) mask."""
    module = al.MultiHeadAttention(3, 4, 6, 0.0, 2).eval()
    x = torch.randn(2, 5, 3)
    module(x)
    module(x, key_padding_mask=torch.tensor([[False] * 4 + [True], [False] * 5]))
    assert sdpa_calls[0].get("is_causal") is True
    assert sdpa_calls[0].get("attn_mask") is None
    assert "is_causal" not in sdpa_calls[1]
    assert sdpa_calls[1]["attn_mask"].shape == (2, 1, 5, 5)
    assert sdpa_calls[1]["attn_mask"].dtype == torch.bool


def test_wrapper_passes_qkv_bias_to_every_head() -> None:
    """qkv_bias=True gives each head's W_query, W_key and W_value a bias; the default, False, gives none."""
    for kwargs, has_bias in [({}, False), ({"qkv_bias": False}, False), ({"qkv_bias": True}, True)]:
        wrapper = al.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2, **kwargs)
        for head in wrapper.heads:
            for linear in (head.W_query, head.W_key, head.W_value):
                assert (linear.bias is not None) is has_bias


def test_fast_path_zeroes_queries_that_see_only_padding_where_sdpa_returns_nan(monkeypatch: pytest.MonkeyPatch):
    """Some SDPA backends return nan for a query whose every key is masked out. The fast path must still give
    such a query a zero context vector, as the explicit path does, and leave every other query as it was. A
    wrapper around SDPA plays that backend here (the CPU kernel returns zeros itself)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def nan_where_nothing_is_visible(*args, **kwargs):
        context_vec = sdpa(*args, **kwargs)
        may_attend = kwargs.get("attn_mask")
        if may_attend is None:
            return context_vec
        return context_vec.masked_fill(~may_attend.any(-1, keepdim=True), float("nan"))

    torch.manual_seed(0)
    mha = al.MultiHeadAttention(4, 6, 5, 0.0, num_heads=3).eval()
    x = torch.randn(2, 5, 4)
    # Left padding: the first two queries of sequence 0 may see keys 0..1 only, which are padding.
    kpm = torch.tensor([[True, True, False, False, False], [False] * 5])
    explicit, _ = mha(x, key_padding_mask=kpm, need_weights=True)
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", nan_where_nothing_is_visible)
    fast = mha(x, key_padding_mask=kpm)
    assert not fast.isnan().any()
    torch.testing.assert_close(fast, explicit)
    torch.testing.assert_close(fast[0, :2], mha.out_proj.bias.expand(2, 6))  # zero context, then out_proj's bias


def test_fast_path_passes_dropout_in_training_only_on_every_call(sdpa_calls: list[dict]) -> None:
    """SDPA gets the module's dropout probability in training and 0 in eval, with and without a mask (padding,
    a KV cache); the explicit path (use_sdpa=False) never calls SDPA."""
    torch.manual_seed(0)
    mha = al.MultiHeadAttention(4, 4, 8, 0.5, 2)
    x = torch.randn(2, 4, 4)
    kpm = torch.tensor([[False] * 3 + [True], [False] * 4])
    for training, dropout_p in [(True, 0.5), (False, 0.0)]:
        mha.train(training)
        sdpa_calls.clear()
        mha(x)
        mha(x, key_padding_mask=kpm)
        for tokens in (slice(0, 1), slice(1, 3), slice(3, 4)):  # prefill, then two tokens, then one
            mha(x[:, tokens], use_cache=True)
        mha.reset_cache()
        # is_causal for the queries that start at 0; a mask for two tokens after the cache; none for one.
        assert [call.get("is_causal", False) for call in sdpa_calls] == [True, False, True, False, False]
        assert [call.get("attn_mask") is None for call in sdpa_calls] == [True, False, True, False, True]
        assert [call.get("dropout_p", 0.0) for call in sdpa_calls] == [dropout_p] * 5
    # The dropout really is applied on the masked path as well: two training forwards differ.
    mha.train()
    assert not torch.allclose(mha(x, key_padding_mask=kpm), mha(x, key_padding_mask=kpm))
    sdpa_calls.clear()
    mha.use_sdpa = False
    mha(x, key_padding_mask=kpm)
    mha.use_sdpa = True
    mha(x, need_weights=True)
    assert sdpa_calls == []
