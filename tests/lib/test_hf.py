"""A Hugging Face model's attention in attention_lib (``attention_lib.hf``): ``from_gpt2_attention`` copies a GPT-2
layer into a ``MultiHeadAttention`` that gives the layer's outputs and the weights ``output_attentions=True``
returns, for every layer of random GPT-2 configurations, padded batches included, compared with ``transformers``'
own GPT-2 (skipped where it is not installed: the installed wheel's test run). Then what it refuses, with
stand-ins laid out as GPT-2's, which need no ``transformers``.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attention_lib as al

F32 = {"atol": 1e-5, "rtol": 1e-5}


@pytest.fixture(scope="module")
def hf_gpt2() -> ModuleType:
    return pytest.importorskip("transformers.models.gpt2.modeling_gpt2", reason="needs transformers")


def _gpt2(hf_gpt2: ModuleType, num_heads: int, head_dim: int, num_layers: int, seed: int, **options: bool) -> nn.Module:
    """A GPT2Model with eager attention, in eval mode, every parameter random (biases and LayerNorms too: a model
    built from a config has zero biases, which would hide a bias left uncopied)."""
    config = hf_gpt2.GPT2Config(
        vocab_size=32,
        n_positions=16,
        n_embd=num_heads * head_dim,
        n_layer=num_layers,
        n_head=num_heads,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
        **options,
    )
    model = hf_gpt2.GPT2Model(config).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(0.5 * torch.randn(parameter.shape, generator=g))
    return model


def _padded(lengths: list[int], num_tokens: int, left: bool) -> torch.Tensor:
    """Hugging Face's attention_mask, 1 for a real token and 0 for padding, (batch, num_tokens)."""
    positions, real = torch.arange(num_tokens), torch.tensor(lengths)[:, None]
    return (positions >= num_tokens - real if left else positions < real).long()


# A model per example (0.15 s): a quarter of the profile's examples.
@settings(max_examples=max(10, settings.default.max_examples // 4))
@given(
    num_heads=st.integers(1, 4),
    head_dim=st.integers(1, 4),
    num_layers=st.integers(1, 2),
    num_tokens=st.integers(1, 8),
    data=st.data(),
    left=st.booleans(),
    upcast=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_from_gpt2_attention_gives_every_layers_outputs_and_weights(
    hf_gpt2: ModuleType,
    num_heads: int,
    head_dim: int,
    num_layers: int,
    num_tokens: int,
    data: st.DataObject,
    left: bool,
    upcast: bool,
    seed: int,
) -> None:
    """Each layer's attention, fed what the layer is fed (its ln_1 output, captured by a forward hook), with the
    padding as key_padding_mask: the layer's output and its output_attentions weights, for every real token.
    (A padding token's own query, whose every key is hidden, gets uniform weights from GPT-2, zeros from us: no
    one reads either.) reorder_and_upcast_attn computes the same in another order."""
    lengths = data.draw(st.lists(st.integers(1, num_tokens), min_size=1, max_size=3))
    model = _gpt2(hf_gpt2, num_heads, head_dim, num_layers, seed, reorder_and_upcast_attn=upcast)
    attention_mask = _padded(lengths, num_tokens, left)
    token_ids = torch.randint(32, attention_mask.shape, generator=torch.Generator().manual_seed(seed))
    captured: list[tuple[torch.Tensor, torch.Tensor]] = []
    hooks = [
        block.attn.register_forward_hook(lambda module, args, output: captured.append((args[0], output[0])))
        for block in model.h
    ]
    try:
        with torch.no_grad():
            out = model(token_ids, attention_mask=attention_mask, output_attentions=True)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(captured) == len(out.attentions) == num_layers
    real = attention_mask.bool()  # (batch, num_tokens): the queries that are real tokens
    for block, (hidden, their_output), their_weights in zip(model.h, captured, out.attentions, strict=True):
        mha = al.from_gpt2_attention(block.attn, context_length=16)
        with torch.no_grad():
            our_output, our_weights = mha(hidden, key_padding_mask=attention_mask == 0, need_weights=True)
        torch.testing.assert_close(our_output[real], their_output[real], **F32)
        torch.testing.assert_close(our_weights.transpose(1, 2)[real], their_weights.transpose(1, 2)[real], **F32)


def test_the_copy_is_a_copy_on_the_layers_dtype_with_its_biases(hf_gpt2: ModuleType) -> None:
    model = _gpt2(hf_gpt2, num_heads=2, head_dim=3, num_layers=1, seed=0).double()
    attn = model.h[0].attn
    mha = al.from_gpt2_attention(attn, context_length=8)
    assert isinstance(mha, al.MultiHeadAttention)
    assert (mha.num_heads, mha.d_in, mha.d_out, mha.context_length) == (2, 6, 6, 8)
    assert all(parameter.dtype == torch.float64 for parameter in mha.parameters())
    assert mha.dropout.p == 0.0
    # Conv1D's (d_in, 3 * d_out) weight, transposed block by block; the biases in the same order.
    assert torch.equal(mha.W_key.weight, attn.c_attn.weight[:, 6:12].T)
    assert torch.equal(mha.W_value.bias, attn.c_attn.bias[12:])
    assert torch.equal(mha.out_proj.weight, attn.c_proj.weight.T)
    own = {parameter.untyped_storage().data_ptr() for parameter in attn.parameters()}
    assert not own & {parameter.untyped_storage().data_ptr() for parameter in mha.parameters()}
    before = {name: tensor.clone() for name, tensor in attn.state_dict().items()}
    with torch.no_grad():
        mha.W_query.weight.add_(1.0)
    assert all(torch.equal(attn.state_dict()[name], tensor) for name, tensor in before.items())


def test_with_sdpa_output_attentions_returns_no_weights_and_eager_does(hf_gpt2: ModuleType) -> None:
    """What the page says of transformers 5: with SDPA, an empty tuple, and the configuration refuses the flag."""
    model = _gpt2(hf_gpt2, num_heads=2, head_dim=2, num_layers=2, seed=1)
    model.set_attn_implementation("sdpa")
    token_ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert model(token_ids, output_attentions=True).attentions == ()
    with pytest.raises(ValueError, match="output_attentions"):
        model.config.output_attentions = True
    model.set_attn_implementation("eager")
    with torch.no_grad():
        assert [tuple(w.shape) for w in model(token_ids, output_attentions=True).attentions] == [(1, 2, 3, 3)] * 2


# --- what it refuses: stand-ins laid out as GPT-2's layer, no transformers needed --------------------------------


class Conv1D(nn.Module):
    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf))
        self.bias = nn.Parameter(torch.randn(nf))


class Layer(nn.Module):
    def __init__(self, d: int = 4, num_heads: int = 2, **options: object) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)
        for name, value in options.items():
            setattr(self, name, value)


def test_a_stand_in_laid_out_as_gpt2s_layer_is_read_by_its_names() -> None:
    layer = Layer(d=6, num_heads=3)
    mha = al.from_gpt2_attention(layer, context_length=5)
    x = torch.randn(2, 5, 6, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        q, k, v = (x @ layer.c_attn.weight + layer.c_attn.bias).split(6, dim=-1)
        scores = al.split_heads(q, 3) @ al.split_heads(k, 3).transpose(-2, -1) / 2**0.5
        weights = al.masked_softmax(scores, al.causal_mask(5))
        expected = al.merge_heads(weights @ al.split_heads(v, 3)) @ layer.c_proj.weight + layer.c_proj.bias
        torch.testing.assert_close(mha(x), expected, **F32)


@pytest.mark.parametrize(
    ("layer", "error", "message"),
    [
        (nn.Linear(4, 12), TypeError, r"attn\.num_heads must be a positive integer, got None"),
        (Layer(num_heads=0), ValueError, r"attn\.num_heads must be a positive integer, got 0"),
        (Layer(c_attn=nn.Identity()), TypeError, r"attn\.c_attn\.weight must be a tensor, .* got NoneType"),
        (Layer(c_proj=None), TypeError, r"attn\.c_proj\.weight must be a tensor"),
        (Layer(c_attn=Conv1D(10, 4)), ValueError, r"c_attn\.weight must have shape \(d_in, 3 \* d_out\).*\(4, 10\)"),
        (Layer(c_proj=Conv1D(4, 3)), ValueError, r"attn\.c_proj\.weight must have shape \(4, 4\) .* got \(3, 4\)"),
        (Layer(d=6, num_heads=4), ValueError, "d_out must be divisible by num_heads"),
        (Layer(is_cross_attention=True), ValueError, "cross-attention"),
        (Layer(scale_attn_weights=False), ValueError, "scale_attn_weights=False"),
        (Layer(scale_attn_by_inverse_layer_idx=True), ValueError, "scale_attn_by_inverse_layer_idx=True"),
    ],
    ids=[
        "not-a-layer",
        "no-heads",
        "no-c-attn",
        "no-c-proj",
        "c-attn-not-three",
        "c-proj-shape",
        "heads-do-not-divide",
        "cross-attention",
        "unscaled",
        "scaled-by-layer",
    ],
)
def test_what_it_cannot_copy_is_refused_with_a_message_that_names_it(
    layer: nn.Module, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        al.from_gpt2_attention(layer, context_length=4)


def test_hugging_faces_cross_attention_and_unscaled_layers_are_refused(hf_gpt2: ModuleType) -> None:
    config = hf_gpt2.GPT2Config(n_embd=8, n_head=2, n_layer=1, vocab_size=16, bos_token_id=0, eos_token_id=0)
    with pytest.raises(ValueError, match="cross-attention"):
        al.from_gpt2_attention(hf_gpt2.GPT2Attention(config, is_cross_attention=True, layer_idx=0), 16)
    config.scale_attn_by_inverse_layer_idx = True
    with pytest.raises(ValueError, match="scale_attn_by_inverse_layer_idx"):
        al.from_gpt2_attention(hf_gpt2.GPT2Attention(config, layer_idx=0), 16)
