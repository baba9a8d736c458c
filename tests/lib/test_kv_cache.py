"""Generating with a KV cache gives what one forward of the whole sequence gives.

For ``MultiHeadAttention`` and ``GroupedQueryAttention``, on both paths: a prompt (prefill), then the
rest in chunks of any size (one token at a time included), with ``use_cache=True``, must equal one
forward without the cache. The causal mask is then aligned bottom-right; the top-left alignment that
``is_causal=True`` assumes is shown to fail the same comparison.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

import attention_lib as al
from attention_lib.kv_cache import append_to_cache, num_cached

TOL = {"atol": 1e-12, "rtol": 1e-10}  # float64


@dataclass
class Case:
    kind: str  # "mha" or "gqa"
    batch: int
    d_in: int
    num_heads: int
    num_kv_groups: int
    head_dim: int
    chunks: list[int]  # the prompt, then the pieces fed one after another
    spare: int  # context_length minus the tokens fed
    use_sdpa: bool
    seed: int

    def module(self) -> torch.nn.Module:
        torch.manual_seed(self.seed)
        d_out = self.num_heads * self.head_dim
        if self.kind == "mha":
            context_length = sum(self.chunks) + self.spare
            module = al.MultiHeadAttention(
                self.d_in, d_out, context_length, 0.0, self.num_heads, qkv_bias=True, use_sdpa=self.use_sdpa
            )
        else:
            module = al.GroupedQueryAttention(
                self.d_in, d_out, 0.0, self.num_heads, self.num_kv_groups, qkv_bias=True, use_sdpa=self.use_sdpa
            )
        return module.double().eval()

    def inputs(self) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed)
        return torch.randn(self.batch, sum(self.chunks), self.d_in, generator=generator, dtype=torch.float64)


@st.composite
def cases(draw: st.DrawFn, kind: str | None = None) -> Case:
    num_heads = draw(st.sampled_from([1, 2, 3, 4, 6]))
    total = draw(st.integers(1, 14))
    chunks = [draw(st.integers(1, total))]
    while sum(chunks) < total:
        # Mostly one token at a time, as generation does; sometimes a longer piece.
        chunks.append(draw(st.one_of(st.just(1), st.integers(1, total - sum(chunks)))))
    return Case(
        kind=kind or draw(st.sampled_from(["mha", "gqa"])),
        batch=draw(st.integers(1, 3)),
        d_in=draw(st.integers(1, 7)),
        num_heads=num_heads,
        num_kv_groups=draw(st.sampled_from([g for g in range(1, num_heads + 1) if num_heads % g == 0])),
        head_dim=draw(st.integers(1, 5)),
        chunks=chunks,
        spare=draw(st.integers(0, 3)),
        use_sdpa=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


def decode(module: torch.nn.Module, x: torch.Tensor, chunks: list[int]) -> torch.Tensor:
    """Feed ``x`` in ``chunks`` with ``use_cache=True``; the outputs, concatenated along the tokens."""
    module.reset_cache()
    outputs, start = [], 0
    for size in chunks:
        outputs.append(module(x[:, start : start + size], use_cache=True))
        start += size
    return torch.cat(outputs, dim=1)


@given(case=cases())
def test_cached_decoding_equals_one_full_forward(case: Case) -> None:
    module, x = case.module(), case.inputs()
    full = module(x)
    cached = decode(module, x, case.chunks)
    torch.testing.assert_close(cached, full, **TOL)
    assert num_cached(module) == x.shape[1]
    # A forward without the cache neither reads nor changes it.
    torch.testing.assert_close(module(x), full, **TOL)
    assert num_cached(module) == x.shape[1]


@given(case=cases(kind="mha"))
def test_cached_weights_are_the_last_rows_of_the_full_weights(case: Case) -> None:
    """need_weights=True with the cache: each step's weights are the full weights' rows for its queries."""
    module, x = case.module(), case.inputs()
    _, full_weights = module(x, need_weights=True)
    module.reset_cache()
    start = 0
    for size in case.chunks:
        _, weights = module(x[:, start : start + size], need_weights=True, use_cache=True)
        # (b, h, size, start + size): the rows of these queries, the columns of every key so far.
        torch.testing.assert_close(weights, full_weights[:, :, start : start + size, : start + size], **TOL)
        start += size


def _attend_with_cache(module: al.MultiHeadAttention, x: torch.Tensor, align: str) -> torch.Tensor:
    """A hand-written cached step: the last token's query against every key, with a mask aligned ``align``."""
    heads = module.num_heads
    queries = al.split_heads(module.W_query(x[:, -1:]), heads)  # (b, h, 1, head_dim)
    keys = al.split_heads(module.W_key(x), heads)  # (b, h, t, head_dim)
    values = al.split_heads(module.W_value(x), heads)
    mask = al.causal_mask(1, x.shape[1], align=align)  # (1, t)
    context = F.scaled_dot_product_attention(queries, keys, values, attn_mask=al.to_sdpa_mask(mask))
    return module.out_proj(al.merge_heads(context))


def test_top_left_alignment_fails_where_bottom_right_passes() -> None:
    """The newest token's query must see every cached key. Aligned top-left (``is_causal=True`` with one
    query and many keys) it sees key 0 only: its context vector is value 0."""
    torch.manual_seed(0)
    module = al.MultiHeadAttention(4, 4, 8, 0.0, 2).double().eval()
    x = torch.randn(1, 5, 4, dtype=torch.float64)
    full_last = module(x)[:, -1:]
    torch.testing.assert_close(_attend_with_cache(module, x, "lower_right"), full_last, **TOL)
    wrong = _attend_with_cache(module, x, "upper_left")
    assert not torch.allclose(wrong, full_last)
    # What the wrong mask computes: the context vector of the first value alone.
    value_0 = module.W_value(x[:, :1])  # (1, 1, d_out)
    torch.testing.assert_close(wrong, module.out_proj(value_0), **TOL)
    # And is_causal=True is that same top-left mask.
    q = al.split_heads(module.W_query(x[:, -1:]), 2)
    k, v = al.split_heads(module.W_key(x), 2), al.split_heads(module.W_value(x), 2)
    is_causal = module.out_proj(al.merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
    torch.testing.assert_close(is_causal, wrong, **TOL)


MODULES: dict[str, Callable[[], torch.nn.Module]] = {
    "mha": lambda: al.MultiHeadAttention(4, 6, 8, 0.0, 2),
    "gqa": lambda: al.GroupedQueryAttention(4, 8, 0.0, 4, 2),
}


class _SdpaCalls(TorchFunctionMode):
    """Records the attn_mask and is_causal of every F.scaled_dot_product_attention call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[torch.Tensor | None, bool]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            self.calls.append((mask, kwargs.get("is_causal", False)))
        return func(*args, **kwargs)


@pytest.mark.parametrize("make", MODULES.values(), ids=MODULES.keys())
def test_only_a_chunk_after_the_cache_passes_a_mask(make: Callable[[], torch.nn.Module]) -> None:
    """Prefill and one-token steps run SDPA without a mask (is_causal for the prefill), as the fused kernels want;
    only several new tokens after a cache need the bottom-right mask. The outputs stay those of the full forward."""
    module, x = make().double(), torch.randn(2, 7, 4, dtype=torch.float64)
    full = module(x)
    module.reset_cache()
    with _SdpaCalls() as sdpa:
        steps = [module(x[:, :3], use_cache=True), module(x[:, 3:4], use_cache=True), module(x[:, 4:], use_cache=True)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)
    (prefill_mask, prefill_causal), (step_mask, step_causal), (chunk_mask, chunk_causal) = sdpa.calls
    assert (prefill_mask, prefill_causal) == (None, True)
    assert (step_mask, step_causal) == (None, False)
    assert chunk_mask is not None
    assert chunk_mask.shape[-2:] == (3, 7)
    assert not chunk_causal


def test_the_gqa_fast_path_builds_no_mask_it_does_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A (t, t) mask at 4,096 tokens is 32 MiB of allocations: built only where it is read."""
    built: list[tuple[int, ...]] = []
    real = al.grouped_query.causal_mask

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(al.grouped_query, "causal_mask", counting)
    module, x = al.GroupedQueryAttention(4, 8, 0.0, 4, 2).double(), torch.randn(2, 5, 4, dtype=torch.float64)
    module(x)
    module(x[:, :4], use_cache=True)
    module(x[:, 4:], use_cache=True)
    assert built == []
    module(x[:, :2], use_cache=True)  # two new tokens after the cache: the one place it is read
    assert len(built) == 1
    al.GroupedQueryAttention(4, 8, 0.0, 4, 2, use_sdpa=False).double()(x)  # the explicit path reads it too
    assert len(built) == 2


@pytest.mark.parametrize("make", MODULES.values(), ids=MODULES.keys())
def test_the_cache_is_a_non_persistent_buffer(make: Callable[[], torch.nn.Module]) -> None:
    module = make()
    assert module.cache_k is None
    assert module.cache_v is None
    module(torch.randn(2, 3, 4), use_cache=True)
    buffers = dict(module.named_buffers())
    assert buffers["cache_k"] is module.cache_k
    assert buffers["cache_v"] is module.cache_v
    assert not any(name.startswith("cache_") for name in module.state_dict())
    # Buffers follow the module's dtype (and device): the cache stays usable after .double().
    module.double()
    assert module.cache_k.dtype == module.cache_v.dtype == torch.float64
    module(torch.randn(2, 1, 4, dtype=torch.float64), use_cache=True)
    assert module.cache_k.shape[2] == 4


@pytest.mark.parametrize("make", MODULES.values(), ids=MODULES.keys())
def test_what_empties_the_cache(make: Callable[[], torch.nn.Module]) -> None:
    module = make()
    x = torch.randn(1, 3, 4)

    def filled() -> torch.nn.Module:
        module(x, use_cache=True)
        assert num_cached(module) >= 3
        return module

    filled().reset_cache()
    assert module.cache_k is None
    assert module.cache_v is None
    # New weights make the cached keys and values stale: a load empties the cache.
    filled().load_state_dict(make().state_dict())
    assert module.cache_k is None
    assert module.cache_v is None
    # A pickled (deep) copy keeps its cache, and so still continues the sequence.
    copy = pickle.loads(pickle.dumps(filled()))
    assert torch.equal(copy.cache_k, module.cache_k)
    if isinstance(module, al.MultiHeadAttention):
        filled().reset_parameters()
        assert module.cache_k is None


def test_the_cache_holds_what_the_formula_says() -> None:
    """2 tensors x batch x kv heads x tokens x head_dim x bytes: GQA with 4 groups of 12 heads keeps a third."""
    x = torch.randn(1, 10, 48)
    mha = al.MultiHeadAttention(48, 48, 10, 0.0, 12)
    gqa = al.GroupedQueryAttention(48, 48, 0.0, 12, 4)
    for module in (mha, gqa):
        module(x, use_cache=True)
    nbytes = {name: m.cache_k.nbytes + m.cache_v.nbytes for name, m in (("mha", mha), ("gqa", gqa))}
    assert nbytes == {"mha": 2 * 1 * 12 * 10 * 4 * 4, "gqa": 2 * 1 * 4 * 10 * 4 * 4}
    assert nbytes["gqa"] * 3 == nbytes["mha"]


@pytest.mark.parametrize("make", MODULES.values(), ids=MODULES.keys())
@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
def test_gradcheck_through_the_cache(make: Callable[[], torch.nn.Module], use_sdpa: bool) -> None:
    """Gradients reach the prompt's tokens through the cached keys and values."""
    torch.manual_seed(0)
    module = make().double()
    module.use_sdpa = use_sdpa
    x = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: decode(module, x, [2, 1, 1]), (x,))


@pytest.mark.parametrize("kind", ["mha", "gqa"])
def test_cached_decoding_on_device(device: torch.device, kind: str) -> None:
    case = Case(kind, 2, 8, 4, 2, 8, [5, 1, 1, 3, 1], 0, True, 0)
    module, x = case.module().to(device), case.inputs().to(device)
    torch.testing.assert_close(decode(module, x, case.chunks), module(x), **TOL)
    assert module.cache_k.device.type == device.type


@pytest.mark.parametrize("empty", ["cache_k", "cache_v"])
def test_a_cache_with_one_buffer_empty_starts_afresh(empty: str) -> None:
    """append_to_cache continues a cache only when both buffers hold tokens: with either one None (empty), the
    new tokens become the whole cache, rather than being joined to half of an old one."""
    old = torch.zeros(1, 2, 3, 4)
    layer = SimpleNamespace(cache_k=old, cache_v=old.clone())
    setattr(layer, empty, None)
    keys, values = torch.ones(1, 2, 1, 4), torch.full((1, 2, 1, 4), 2.0)
    assert append_to_cache(layer, keys, values) == (keys, values)
    assert (layer.cache_k, layer.cache_v) == (keys, values)
    assert num_cached(layer) == 1
