"""A cache allocated once and written in place gives, at every step, what the ``torch.cat`` cache gives.

For ``MultiHeadAttention`` and ``GroupedQueryAttention``, on both paths, in both modes of ``StaticKVCache``
(eager: attend to the filled slots; ``static_shapes``: attend to the whole buffer, with a mask): a prompt, then
chunks of any size, must give the outputs of ``use_cache=True`` chunk by chunk. Then what makes the cache fit for
CUDA graphs and ``torch.compile``: the buffers never move, a step allocates no cache, the counter lives on the
device, and a compiled step neither breaks its graph nor recompiles. On a GPU, a captured graph replayed step by
step gives the eager outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al
from attention_lib.kv_cache import num_cached

TOL = {"atol": 1e-12, "rtol": 1e-10}  # float64


@dataclass
class Case:
    kind: str  # "mha" or "gqa"
    batch: int
    num_heads: int
    num_kv_groups: int
    head_dim: int
    chunks: list[int]  # the prompt, then the pieces fed one after another
    spare: int  # slots left empty at the end
    use_sdpa: bool
    static_shapes: bool
    seed: int

    @property
    def kv_heads(self) -> int:
        return self.num_heads if self.kind == "mha" else self.num_kv_groups

    def module(self) -> torch.nn.Module:
        torch.manual_seed(self.seed)
        d_in, d_out = 5, self.num_heads * self.head_dim
        if self.kind == "mha":
            module = al.MultiHeadAttention(
                d_in, d_out, self.max_tokens, 0.0, self.num_heads, qkv_bias=True, use_sdpa=self.use_sdpa
            )
        else:
            module = al.GroupedQueryAttention(
                d_in, d_out, 0.0, self.num_heads, self.num_kv_groups, qkv_bias=True, use_sdpa=self.use_sdpa
            )
        return module.double().eval()

    @property
    def max_tokens(self) -> int:
        return sum(self.chunks) + self.spare

    def cache(self) -> al.StaticKVCache:
        return al.StaticKVCache(
            self.batch,
            self.kv_heads,
            self.max_tokens,
            self.head_dim,
            static_shapes=self.static_shapes,
            dtype=torch.float64,
        )

    def inputs(self) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed)
        return torch.randn(self.batch, sum(self.chunks), 5, generator=generator, dtype=torch.float64)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    num_heads = draw(st.sampled_from([1, 2, 3, 4, 6]))
    total = draw(st.integers(1, 12))
    chunks = [draw(st.integers(1, total))]
    while sum(chunks) < total:
        chunks.append(draw(st.one_of(st.just(1), st.integers(1, total - sum(chunks)))))
    return Case(
        kind=draw(st.sampled_from(["mha", "gqa"])),
        batch=draw(st.integers(1, 3)),
        num_heads=num_heads,
        num_kv_groups=draw(st.sampled_from([g for g in range(1, num_heads + 1) if num_heads % g == 0])),
        head_dim=draw(st.integers(1, 4)),
        chunks=chunks,
        spare=draw(st.integers(0, 4)),
        use_sdpa=draw(st.booleans()),
        static_shapes=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


@given(case=cases())
def test_every_step_equals_the_torch_cat_cache(case: Case) -> None:
    module, x, cache = case.module(), case.inputs(), case.cache()
    module.reset_cache()
    start = 0
    for size in case.chunks:
        piece = x[:, start : start + size]
        expected = module(piece, use_cache=True)
        torch.testing.assert_close(module(piece, cache=cache), expected, **TOL)
        start += size
        # What the cache holds is what the torch.cat cache holds, in its first slots.
        torch.testing.assert_close(cache.keys[:, :, :start], module.cache_k, **TOL)
        torch.testing.assert_close(cache.values[:, :, :start], module.cache_v, **TOL)
    # The slots after the tokens were never written.
    assert not cache.keys[:, :, start:].any()
    assert not cache.values[:, :, start:].any()
    if case.static_shapes:
        assert int(cache.position) == start
    else:
        assert cache.num_filled == start
    # cache= left the module's own cache alone.
    assert num_cached(module) == start


@pytest.mark.parametrize("static_shapes", [False, True])
def test_the_weights_with_a_static_cache_are_the_full_weights_rows(static_shapes: bool) -> None:
    """need_weights=True reads the cache too: with static_shapes the empty slots get weight exactly 0."""
    torch.manual_seed(0)
    module = al.MultiHeadAttention(6, 6, 10, 0.0, 3).double().eval()
    x = torch.randn(2, 7, 6, dtype=torch.float64)
    _, full = module(x, need_weights=True)
    cache = al.StaticKVCache(2, 3, 10, 2, static_shapes=static_shapes, dtype=torch.float64)
    _, prompt = module(x[:, :4], need_weights=True, cache=cache)
    for i in range(4, 7):
        _, weights = module(x[:, i : i + 1], need_weights=True, cache=cache)
        keys = weights.shape[-1]
        assert keys == (10 if static_shapes else i + 1)
        torch.testing.assert_close(weights[..., : i + 1], full[:, :, i : i + 1, : i + 1], **TOL)
        assert not weights[..., i + 1 :].any()
    torch.testing.assert_close(prompt[..., :4], full[:, :, :4, :4], **TOL)


@pytest.mark.parametrize("static_shapes", [False, True])
def test_a_step_writes_in_place_and_reset_keeps_the_buffers(static_shapes: bool) -> None:
    """What a CUDA graph needs: the buffers it recorded stay where they are, through steps and resets."""
    torch.manual_seed(0)
    module = al.GroupedQueryAttention(8, 8, 0.0, 4, 2).eval()
    cache = al.StaticKVCache(1, 2, 6, 2, static_shapes=static_shapes)
    pointers = (cache.keys.data_ptr(), cache.values.data_ptr(), cache.position.data_ptr())
    x = torch.randn(1, 6, 8)
    first = module(x[:, :3], cache=cache)
    for i in range(3, 6):
        module(x[:, i : i + 1], cache=cache)
    assert (cache.keys.data_ptr(), cache.values.data_ptr(), cache.position.data_ptr()) == pointers
    cache.reset()
    assert (cache.position.item(), cache.num_filled) == (0, 0)
    assert (cache.keys.data_ptr(), cache.values.data_ptr(), cache.position.data_ptr()) == pointers
    # After reset() the cache starts again: the same prompt gives the same output.
    torch.testing.assert_close(module(x[:, :3], cache=cache), first)


def test_the_counter_lives_on_the_device_only_with_static_shapes() -> None:
    """Eager, the Python counter moves and the tensor stays at 0; with static_shapes, the other way round."""
    eager = al.StaticKVCache(1, 1, 4, 2)
    static = al.StaticKVCache(1, 1, 4, 2, static_shapes=True)
    keys = torch.ones(1, 1, 3, 2)
    eager.update(keys, keys)
    static.update(keys, keys)
    assert (eager.num_filled, int(eager.position)) == (3, 0)
    assert (static.num_filled, int(static.position)) == (0, 3)
    _, _, mask = static.update(keys[:, :, :1], keys[:, :, :1])
    # The fourth token sees the four slots: its own and the three before.
    assert mask.tolist() == [[False, False, False, False]]


def test_an_eager_cache_masks_only_a_step_of_several_tokens() -> None:
    """Eager, one new token sees every filled slot: update returns no mask, so attention may take its unmasked
    path. Several new tokens get the causal mask aligned bottom-right over the filled slots (True = hidden)."""
    cache = al.StaticKVCache(1, 1, 6, 2)
    prompt, step, chunk = (torch.ones(1, 1, t, 2) for t in (2, 1, 3))
    assert cache.update(prompt, prompt)[2].tolist() == [[False, True], [False, False]]
    assert cache.update(step, step)[2] is None
    keys, values, mask = cache.update(chunk, chunk)
    assert keys.shape[2] == values.shape[2] == 6
    # Tokens 3, 4 and 5 each see the three cached slots, themselves and the new tokens before them.
    assert mask.tolist() == [
        [False, False, False, False, True, True],
        [False, False, False, False, False, True],
        [False, False, False, False, False, False],
    ]


def _devices_of_a_cache_at_work(device: torch.device, static_shapes: bool) -> set[str]:
    """The device types of a cache's buffers and of the keys, values and masks its updates return."""
    cache = al.StaticKVCache(1, 2, 5, 3, static_shapes=static_shapes, device=device)
    chunk = torch.ones(1, 2, 2, 3, device=device)
    returned = [*cache.update(chunk, chunk), *cache.update(chunk[:, :, :1], chunk[:, :, :1])]
    return {tensor.device.type for tensor in [*cache.buffers(), *returned] if tensor is not None}


@pytest.mark.parametrize("static_shapes", [False, True])
def test_everything_a_cache_holds_or_returns_is_on_its_device(device: torch.device, static_shapes: bool) -> None:
    """A cache is allocated where the layer runs: its buffers, the counter and the slot indices included (a
    CUDA graph reads and advances them on the GPU), and the masks it returns, which meet the scores there."""
    assert _devices_of_a_cache_at_work(device, static_shapes) == {device.type}


@pytest.mark.parametrize("static_shapes", [False, True])
def test_a_cache_on_the_meta_device_keeps_everything_there(static_shapes: bool) -> None:
    """meta, a device every machine has, stands for a GPU: a buffer or a mask allocated on the default device
    instead of the cache's would be a CPU tensor."""
    assert _devices_of_a_cache_at_work(torch.device("meta"), static_shapes) == {"meta"}


def test_the_cache_is_state_of_one_generation_not_of_the_model() -> None:
    cache = al.StaticKVCache(1, 2, 4, 3)
    assert cache.state_dict() == {}
    half = cache.to(torch.float16)
    assert half.keys.dtype == half.values.dtype == torch.float16
    # The counter and the slot indices are integers and stay so.
    assert half.position.dtype == half.slots.dtype == torch.long


@pytest.mark.compiles
@pytest.mark.parametrize("kind", ["mha", "gqa"])
def test_a_compiled_step_is_one_graph_that_never_recompiles(kind: str) -> None:
    """torch.compile traces a step with static_shapes in one graph (fullgraph) and reuses it at every position:
    the position is a tensor it reads, not a number it would specialize on."""
    torch.manual_seed(0)
    if kind == "mha":
        module = al.MultiHeadAttention(8, 8, 12, 0.0, 2).eval()
    else:
        module = al.GroupedQueryAttention(8, 8, 0.0, 2, 1).eval()
    cache = al.StaticKVCache(1, 2 if kind == "mha" else 1, 12, 4, static_shapes=True)
    x = torch.randn(1, 12, 8)
    full = module(x).detach()
    torch._dynamo.reset()
    step = torch.compile(lambda token: module(token, cache=cache), backend="aot_eager", fullgraph=True)
    with torch.inference_mode(), torch._dynamo.config.patch(error_on_recompile=True):
        outputs = [module(x[:, :4], cache=cache)] + [step(x[:, i : i + 1]) for i in range(4, 12)]
    torch.testing.assert_close(torch.cat(outputs, dim=1), full)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m, c, x: m(x, cache="cache"), TypeError, ["cache must be a StaticKVCache", "str"]),
        (lambda m, c, x: m(x, use_cache=True, cache=c), ValueError, ["cache= and use_cache=True"]),
        (
            lambda m, c, x: m(x, torch.zeros(1, 3, dtype=torch.bool), cache=c),
            ValueError,
            ["key_padding_mask cannot be combined with cache="],
        ),
        (
            lambda m, c, x: m(x, cache=al.StaticKVCache(1, 2, 9, 2)),
            ValueError,
            ["max_tokens=9", "context_length=8", "max_tokens <= 8"],
        ),
        (
            lambda m, c, x: m(x, cache=al.StaticKVCache(1, 3, 8, 2)),
            ValueError,
            ["keys must have shape (batch=1, num_kv_heads=3, num_tokens, head_dim=2)", "(1, 2, 3, 2)"],
        ),
        (
            lambda m, c, x: m(torch.cat([x, x]), cache=c),
            ValueError,
            ["keys must have shape (batch=1,", "(2, 2, 3, 2)"],
        ),
        (
            lambda m, c, x: m(x, cache=al.StaticKVCache(1, 2, 8, 2, dtype=torch.float64)),
            TypeError,
            ["keys must have the cache's dtype, torch.float64, got torch.float32"],
        ),
        (
            lambda m, c, x: m(x, cache=al.StaticKVCache(1, 2, 8, 2, device="meta")),
            ValueError,
            ["keys must be on the cache's device, meta, got cpu"],
        ),
        (
            lambda m, c, x: [m(x, cache=c) for _ in range(3)],
            ValueError,
            ["the cache holds 6 tokens and 3 more do not fit in max_tokens=8", "reset()"],
        ),
    ],
    ids=["not-a-cache", "two-caches", "padding", "too-long", "heads", "batch", "dtype", "device", "overflow"],
)
def test_what_a_static_cache_refuses_is_named(call, error: type[Exception], words: list[str]) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    module = al.MultiHeadAttention(4, 4, 8, 0.0, 2)
    cache = al.StaticKVCache(1, 2, 8, 2)
    with pytest.raises(error) as raised:
        call(module, cache, torch.randn(1, 3, 4))
    for word in words:
        assert word in str(raised.value)


def test_only_a_cache_with_static_shapes_can_be_captured() -> None:
    module = al.MultiHeadAttention(4, 4, 8, 0.0, 2)
    with pytest.raises(ValueError, match="cache must have static_shapes=True"):
        al.capture_decode_step(module, al.StaticKVCache(1, 2, 8, 2), torch.zeros(1, 1, 4))


def test_gqa_refuses_two_caches_and_a_cache_of_the_wrong_heads() -> None:
    module = al.GroupedQueryAttention(4, 4, 0.0, 2, 1)
    x = torch.randn(1, 2, 4)
    with pytest.raises(ValueError, match="cache= and use_cache=True"):
        module(x, True, cache=al.StaticKVCache(1, 1, 4, 2))
    # A cache made for multi-head attention (2 heads) does not fit this layer's 1 key/value head.
    with pytest.raises(ValueError, match=r"num_kv_heads=2, .*got \(1, 1, 2, 2\)"):
        module(x, cache=al.StaticKVCache(1, 2, 4, 2))


@pytest.mark.parametrize(
    ("argument", "kwargs", "error"),
    [
        ("batch", {"batch": 0}, ValueError),
        ("max_tokens", {"max_tokens": -1}, ValueError),
        ("head_dim", {"head_dim": 1.5}, TypeError),
    ],
)
def test_a_cache_of_no_size_is_refused(argument: str, kwargs: dict[str, object], error: type[Exception]) -> None:
    sizes: dict[str, object] = {"batch": 1, "num_kv_heads": 1, "max_tokens": 4, "head_dim": 2} | kwargs
    with pytest.raises(error, match=f"{argument} must be a positive integer"):
        al.StaticKVCache(**sizes)  # type: ignore[arg-type]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", ["mha", "gqa"])
def test_a_cuda_graph_replays_the_decode_step(kind: str, dtype: torch.dtype) -> None:
    """Captured once, replayed at every position: the outputs of the eager torch.cat cache."""
    torch.manual_seed(0)
    if kind == "mha":
        module: torch.nn.Module = al.MultiHeadAttention(64, 64, 40, 0.0, 4)
    else:
        module = al.GroupedQueryAttention(64, 64, 0.0, 4, 2)
    module = module.to("cuda", dtype).eval()
    x = torch.randn(2, 40, 64, device="cuda", dtype=dtype)
    cache = al.StaticKVCache(2, 4 if kind == "mha" else 2, 40, 16, static_shapes=True, dtype=dtype, device="cuda")
    with torch.inference_mode():
        expected = [module(x[:, :8], use_cache=True)] + [module(x[:, i : i + 1], use_cache=True) for i in range(8, 40)]
        token = torch.randn(2, 1, 64, device="cuda", dtype=dtype)
        graph, output = al.capture_decode_step(module, cache, token)
        assert int(cache.position) == 0  # the warm-up's move is undone, and capturing runs nothing
        outputs = [module(x[:, :8], cache=cache).clone()]
        for i in range(8, 40):
            token.copy_(x[:, i : i + 1])
            graph.replay()
            outputs.append(output.clone())
    tol = {} if dtype == torch.float32 else {"atol": 2e-2, "rtol": 2e-2}
    torch.testing.assert_close(torch.cat(outputs, dim=1), torch.cat(expected, dim=1), **tol)
    assert int(cache.position) == 40


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_capturing_warms_up_the_recorded_step_on_a_side_stream() -> None:
    """torch.cuda.graph asks for a warm-up on a side stream before a capture: every kernel the graph records has
    then run once (loaded, its workspace allocated), and the warm-up's work is not on the default stream. The
    warm-up is the very step the graph records: the token, with the cache."""
    torch.manual_seed(0)
    module = al.MultiHeadAttention(64, 64, 8, 0.0, 4).to("cuda").eval()
    cache = al.StaticKVCache(1, 4, 8, 16, static_shapes=True, device="cuda")
    token = torch.randn(1, 1, 64, device="cuda")
    calls = []

    def record(layer: torch.nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        capturing = torch.cuda.is_current_stream_capturing()
        calls.append((torch.cuda.current_stream(), capturing, args[0] is token, kwargs.get("cache") is cache))

    module.register_forward_pre_hook(record, with_kwargs=True)
    with torch.inference_mode():
        al.capture_decode_step(module, cache, token)
    (warm_up_stream, *warm_up), (_, *recorded) = calls  # (capturing, the token, the cache)
    assert warm_up_stream != torch.cuda.default_stream()
    assert warm_up == [False, True, True]
    assert recorded == [True, True, True]
    assert int(cache.position) == 0


@pytest.mark.gpu
@pytest.mark.compiles
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
# Importing inductor warns about torch.jit in some torch versions (nothing this test calls)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
# and advises TF32 for float32 matrix products; this test keeps PyTorch's default precision.
@pytest.mark.filterwarnings("ignore:TensorFloat32:UserWarning")
# and records an empty graph along the way, which PyTorch warns about.
@pytest.mark.filterwarnings("ignore:The CUDA Graph is empty:UserWarning")
def test_torch_compile_reduce_overhead_decodes_like_eager() -> None:
    """torch.compile's CUDA graphs (mode="reduce-overhead") take the step whole: one graph, no recompilation
    as the position moves, no step skipped for mutating the cache, and the eager outputs."""
    torch.manual_seed(0)
    module = al.MultiHeadAttention(64, 64, 48, 0.0, 4).to("cuda").eval()
    cache = al.StaticKVCache(1, 4, 48, 16, static_shapes=True, device="cuda")
    x = torch.randn(1, 48, 64, device="cuda")
    with torch.inference_mode():
        expected = module(x)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    step = torch.compile(lambda token: module(token, cache=cache), mode="reduce-overhead", fullgraph=True)
    with torch.inference_mode(), torch._dynamo.config.patch(error_on_recompile=True):
        outputs = [module(x[:, :8], cache=cache)]
        for i in range(8, 48):
            outputs.append(step(x[:, i : i + 1].clone()).clone())
    torch.testing.assert_close(torch.cat(outputs, dim=1), expected, atol=2e-4, rtol=2e-4)
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] == 0
    assert int(cache.position) == 48
