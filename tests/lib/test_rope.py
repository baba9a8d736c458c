"""Positions: RoPE and the positions of new tokens under a KV cache (``attention_lib.rope``).

What RoPE promises (a rotation: norms kept, position 0 the identity, scores that depend only on the distance
between positions), the two layouts being one rotation up to a permutation, cached generation equal to one full
forward, and the offset bug (the positions of a cached step restarting at 0) shown to fail that comparison, for
RoPE and for learned position embeddings. Then parity, on the same inputs, with the code readers use, imported
rather than restated: Hugging Face's Llama and GPT-J (``transformers``) and the book's Llama 3
(``llms_from_scratch``); those tests are skipped where the package is not installed (the installed wheel's test
run). Last, the bad arguments and their messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al
from attention_lib.kv_cache import num_cached

TOL = {"atol": 1e-12, "rtol": 1e-10}  # float64
LAYOUTS = ["half", "interleaved"]

head_dims = st.integers(1, 32).map(lambda n: 2 * n)  # even, 2 .. 64
layouts = st.sampled_from(LAYOUTS)
seeds = st.integers(0, 2**16)


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _positions(shape: tuple[int, ...], seed: int, high: int = 10_000) -> torch.Tensor:
    return torch.randint(high, shape, generator=torch.Generator().manual_seed(seed))


# --- what a rotation promises ----------------------------------------------------------------------------------


@given(
    head_dim=head_dims,
    num_tokens=st.integers(1, 16),
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    per_sequence=st.booleans(),
    layout=layouts,
    seed=seeds,
)
def test_rope_keeps_the_norm_of_every_pair(
    head_dim: int, num_tokens: int, lead: list[int], per_sequence: bool, layout: str, seed: int
) -> None:
    """Each pair is rotated: its norm, and so the vector's, stays what it was, at any position."""
    batch = (lead or [1])[0]
    x = _randn(*([batch] if per_sequence and not lead else lead), num_tokens, head_dim, seed=seed)
    shape = (x.shape[0], num_tokens) if per_sequence and x.dim() >= 3 else (num_tokens,)
    rotated = al.apply_rope(x, _positions(shape, seed), layout)
    assert rotated.shape == x.shape
    assert rotated.dtype == x.dtype
    perm = al.interleaved_to_half(head_dim)
    # Pair i is (i, i + head_dim/2) in the half layout; move the interleaved pairs there first.
    halves = (lambda t: t) if layout == "half" else (lambda t: t[..., perm])

    def pair_norms(t: torch.Tensor) -> torch.Tensor:
        first, second = halves(t).chunk(2, dim=-1)
        return torch.hypot(first, second)

    torch.testing.assert_close(pair_norms(rotated), pair_norms(x), **TOL)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1), **TOL)


@given(head_dim=head_dims, num_tokens=st.integers(1, 16), layout=layouts, seed=seeds)
def test_position_zero_is_the_identity(head_dim: int, num_tokens: int, layout: str, seed: int) -> None:
    x = _randn(2, 3, num_tokens, head_dim, seed=seed)
    assert torch.equal(al.apply_rope(x, torch.zeros(num_tokens, dtype=torch.long), layout), x)


@given(
    head_dim=head_dims,
    num_queries=st.integers(1, 16),
    num_keys=st.integers(1, 16),
    offset=st.integers(-1000, 1000),
    base=st.sampled_from([10_000.0, 500_000.0, 100.0]),
    layout=layouts,
    seed=seeds,
)
def test_scores_depend_only_on_the_distance_between_positions(
    head_dim: int, num_queries: int, num_keys: int, offset: int, base: float, layout: str, seed: int
) -> None:
    """q_m · k_n after RoPE is (R_m q) · (R_n k) = (R_(m-n) q) · k: shifting every position by the same offset
    changes no score, and the score is that of the query rotated by the distance alone."""
    q, k = _randn(2, num_queries, head_dim, seed=seed), _randn(2, num_keys, head_dim, seed=seed + 1)
    m, n = _positions((num_queries,), seed, 1000), _positions((num_keys,), seed + 1, 1000)

    def scores(m: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        return al.apply_rope(q, m, layout, base) @ al.apply_rope(k, n, layout, base).transpose(-2, -1)

    expected = scores(m, n)  # (2, num_queries, num_keys)
    torch.testing.assert_close(scores(m + offset, n + offset), expected, atol=1e-9, rtol=1e-9)
    # Row j, column l: query j rotated by m[j] - n[l], against the unrotated key l.
    for j in range(num_queries):
        distances = m[j] - n  # (num_keys,)
        by_distance = al.apply_rope(q[:, j : j + 1].expand(2, num_keys, head_dim), distances, layout, base)
        torch.testing.assert_close((by_distance * k).sum(-1), expected[:, j], atol=1e-9, rtol=1e-9)


def test_absolute_positions_do_change_each_vector() -> None:
    """What the relative property does not say: each rotated vector depends on its own position."""
    x = _randn(1, 4, 8, seed=0)
    assert not torch.allclose(al.apply_rope(x, torch.arange(4)), al.apply_rope(x, torch.arange(4) + 1))


def test_the_frequencies_and_tables() -> None:
    """Pair i turns by base ** (-2i / head_dim) radians per position; the tables are one column per pair."""
    freqs = al.rope_frequencies(8, 100.0, dtype=torch.float64)
    torch.testing.assert_close(freqs, torch.tensor([1.0, 100**-0.25, 100**-0.5, 100**-0.75], dtype=torch.float64))
    assert al.rope_frequencies(64).dtype == torch.float32
    positions = torch.tensor([[0, 3, 7], [2, 2, 9]])
    cos, sin = al.rope_cos_sin(8, positions, 100.0, dtype=torch.float64)
    assert cos.shape == sin.shape == (2, 3, 4)
    torch.testing.assert_close(cos, torch.cos(positions[..., None] * freqs), **TOL)
    torch.testing.assert_close(sin, torch.sin(positions[..., None] * freqs), **TOL)
    assert al.rope_cos_sin(8, torch.arange(5))[0].shape == (5, 4)


def test_the_rotation_written_out_for_one_pair() -> None:
    """head_dim = 2: one pair, one frequency (1 radian per position): a plain 2-D rotation by the position."""
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [3.0, 4.0]], dtype=torch.float64)
    position = torch.tensor([1, 2, 3])
    a = position.double()
    expected = torch.stack((x[:, 0] * a.cos() - x[:, 1] * a.sin(), x[:, 0] * a.sin() + x[:, 1] * a.cos()), -1)
    for layout in LAYOUTS:  # with one pair, both layouts are the same
        torch.testing.assert_close(al.apply_rope(x, position, layout), expected, **TOL)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_half_precision_is_rotated_in_float32_and_returned_in_its_dtype(dtype: torch.dtype) -> None:
    x = torch.randn(2, 3, 5, 16).to(dtype)
    positions = torch.arange(1000, 1005)
    rotated = al.apply_rope(x, positions)
    assert rotated.dtype == dtype
    assert torch.equal(rotated, al.apply_rope(x.float(), positions).to(dtype))


# --- the two layouts -------------------------------------------------------------------------------------------


@given(
    head_dim=head_dims,
    num_tokens=st.integers(1, 16),
    batch=st.integers(1, 3),
    num_heads=st.integers(1, 4),
    per_sequence=st.booleans(),
    seed=seeds,
)
def test_the_layouts_agree_up_to_the_permutation(
    head_dim: int, num_tokens: int, batch: int, num_heads: int, per_sequence: bool, seed: int
) -> None:
    """Exactly, bit for bit: apply_rope(x[..., perm], p, "half") == apply_rope(x, p, "interleaved")[..., perm]."""
    x = _randn(batch, num_heads, num_tokens, head_dim, seed=seed)
    positions = _positions((batch, num_tokens) if per_sequence else (num_tokens,), seed)
    perm = al.interleaved_to_half(head_dim)
    assert torch.equal(
        al.apply_rope(x[..., perm], positions, "half"), al.apply_rope(x, positions, "interleaved")[..., perm]
    )
    # And back, with the inverse permutation.
    back = perm.argsort()
    assert torch.equal(
        al.apply_rope(x[..., back], positions, "interleaved"), al.apply_rope(x, positions, "half")[..., back]
    )


def test_the_permutation_moves_pair_2i_2i_plus_1_to_i_i_plus_half() -> None:
    assert al.interleaved_to_half(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert al.interleaved_to_half(2).tolist() == [0, 1]  # one pair: the layouts coincide
    x = _randn(1, 3, 8, seed=0)
    assert not torch.allclose(
        al.apply_rope(x, torch.arange(3), "half"), al.apply_rope(x, torch.arange(3), "interleaved")
    )


@pytest.mark.parametrize(("num_heads", "head_dim"), [(1, 2), (2, 8), (3, 4)])
def test_the_row_permutation_is_hugging_faces_conversion_of_metas_llama_weights(num_heads: int, head_dim: int) -> None:
    """transformers' convert_llama_weights_to_hf.py (not in its wheel, so quoted here) permutes W_q and W_k of
    Meta's interleaved checkpoints with w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(
    dim1, dim2): each head's rows by interleaved_to_half."""
    dim1, dim2 = num_heads * head_dim, 5
    w = torch.randn(dim1, dim2)
    hf = w.view(num_heads, dim1 // num_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)
    ours = w.view(num_heads, head_dim, dim2)[:, al.interleaved_to_half(head_dim)].reshape(dim1, dim2)
    assert torch.equal(ours, hf)


@given(
    num_heads=st.integers(1, 4),
    head_dim=st.integers(2, 8).map(lambda n: 2 * n),
    num_tokens=st.integers(2, 10),
    qkv_bias=st.booleans(),
    seed=seeds,
)
def test_weights_trained_with_one_layout_run_with_the_other_once_their_rows_are_permuted(
    num_heads: int, head_dim: int, num_tokens: int, qkv_bias: bool, seed: int
) -> None:
    """The scores are sums over a head's dimensions, so permuting each head's rows of W_query and W_key turns an
    interleaved model into a half one with the same outputs; without the permutation they differ."""
    torch.manual_seed(seed)
    d_out = num_heads * head_dim
    interleaved = al.RoPEAttention(5, d_out, 0.0, num_heads, qkv_bias, layout="interleaved").double()
    half = al.RoPEAttention(5, d_out, 0.0, num_heads, qkv_bias, layout="half").double()
    half.load_state_dict(interleaved.state_dict())
    x = _randn(2, num_tokens, 5, seed=seed)
    assert not torch.allclose(half(x)[:, 1:], interleaved(x)[:, 1:])  # position 0 alone is not rotated
    perm = al.interleaved_to_half(head_dim)
    with torch.no_grad():
        for name in ("W_query", "W_key"):
            for param in getattr(half, name).parameters():  # the weight's rows, and the bias
                by_head = param.view(num_heads, head_dim, -1)
                param.copy_(by_head[:, perm].reshape(param.shape))
    torch.testing.assert_close(half(x), interleaved(x), **TOL)


# --- the KV cache: positions start at the number of cached tokens ----------------------------------------------


@dataclass
class Case:
    batch: int
    d_in: int
    num_heads: int
    head_dim: int
    chunks: list[int]  # the prompt, then the pieces fed one after another
    layout: str
    qkv_bias: bool
    seed: int

    def module(self) -> al.RoPEAttention:
        torch.manual_seed(self.seed)
        d_out = self.num_heads * self.head_dim
        module = al.RoPEAttention(self.d_in, d_out, 0.0, self.num_heads, self.qkv_bias, layout=self.layout)
        return module.double().eval()

    def inputs(self) -> torch.Tensor:
        return _randn(self.batch, sum(self.chunks), self.d_in, seed=self.seed)


@st.composite
def cases(draw: st.DrawFn, min_chunks: int = 1) -> Case:
    total = draw(st.integers(min_chunks, 16))
    chunks = [draw(st.integers(1, total - min_chunks + 1))]
    while sum(chunks) < total:
        # Mostly one token at a time, as generation does; sometimes a longer piece.
        chunks.append(draw(st.one_of(st.just(1), st.integers(1, total - sum(chunks)))))
    return Case(
        batch=draw(st.integers(1, 3)),
        d_in=draw(st.integers(1, 7)),
        num_heads=draw(st.integers(1, 4)),
        head_dim=draw(st.integers(1, 5).map(lambda n: 2 * n)),
        chunks=chunks,
        layout=draw(layouts),
        qkv_bias=draw(st.booleans()),
        seed=draw(seeds),
    )


def decode(
    module: al.RoPEAttention,
    x: torch.Tensor,
    chunks: list[int],
    positions: Callable[[int, int], torch.Tensor | None] = lambda start, size: None,
) -> torch.Tensor:
    """Feed ``x`` in ``chunks`` with ``use_cache=True`` (``position_ids=positions(start, size)``); the outputs."""
    module.reset_cache()
    outputs, start = [], 0
    for size in chunks:
        outputs.append(module(x[:, start : start + size], use_cache=True, position_ids=positions(start, size)))
        start += size
    return torch.cat(outputs, dim=1)


@given(case=cases())
def test_cached_decoding_equals_one_full_forward(case: Case) -> None:
    module, x = case.module(), case.inputs()
    full = module(x)
    torch.testing.assert_close(decode(module, x, case.chunks), full, **TOL)
    assert num_cached(module) == x.shape[1]
    # The cache holds the keys already rotated, each at its own absolute position.
    keys = al.split_heads(module.W_key(x), case.num_heads)
    torch.testing.assert_close(module.cache_k, al.apply_rope(keys, torch.arange(x.shape[1]), case.layout), **TOL)
    # A forward without the cache neither reads nor changes it.
    torch.testing.assert_close(module(x), full, **TOL)
    assert num_cached(module) == x.shape[1]
    # The same, with the positions passed explicitly: the steps' absolute positions.
    explicit = decode(module, x, case.chunks, lambda start, size: al.positions_for_step(start, size))
    torch.testing.assert_close(explicit, full, **TOL)


@given(case=cases(min_chunks=2))
def test_positions_restarting_at_zero_in_a_cached_step_change_the_outputs(case: Case) -> None:
    """The offset bug: every step after the prompt given positions 0 .. size - 1 again. The prompt's outputs
    are right; every later step's differ from the full forward's."""
    module, x = case.module(), case.inputs()
    full = module(x)
    wrong = decode(module, x, case.chunks, lambda start, size: torch.arange(size))
    prompt = case.chunks[0]
    torch.testing.assert_close(wrong[:, :prompt], full[:, :prompt], **TOL)
    start = prompt
    for size in case.chunks[1:]:
        assert not torch.allclose(wrong[:, start : start + size], full[:, start : start + size])
        start += size


@pytest.mark.parametrize("chunks", [[1, 1, 1, 1, 1, 1], [3, 1, 2], [5, 1]])
def test_learned_position_embeddings_need_the_offset_too(chunks: list[int]) -> None:
    """With a position embedding table (as in PreviousTokens), a cached step adds the embeddings of its absolute
    positions, positions_for_step(num_cached, num_tokens): torch.arange(num_tokens) would add those of the first
    tokens again."""
    torch.manual_seed(0)
    vocab_size, context_length, d_model = 11, 8, 8
    tok_emb, pos_emb = torch.nn.Embedding(vocab_size, d_model), torch.nn.Embedding(context_length, d_model)
    attn = al.MultiHeadAttention(d_model, d_model, context_length, 0.0, 2).eval()
    token_ids = torch.randint(vocab_size, (2, sum(chunks)))

    def embed(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return tok_emb(ids) + pos_emb(positions)  # (b, t, d_model)

    full = attn(embed(token_ids, torch.arange(token_ids.shape[1])))

    def generate(positions: Callable[[int, int], torch.Tensor]) -> torch.Tensor:
        attn.reset_cache()
        outputs, start = [], 0
        for size in chunks:
            x = embed(token_ids[:, start : start + size], positions(num_cached(attn), size))
            outputs.append(attn(x, use_cache=True))
            start += size
        return torch.cat(outputs, dim=1)

    with torch.no_grad():
        right = generate(lambda num_past, size: al.positions_for_step(num_past, size))
        wrong = generate(lambda num_past, size: torch.arange(size))
    torch.testing.assert_close(right, full)
    assert not torch.allclose(wrong[:, chunks[0] :], full[:, chunks[0] :])


def test_positions_for_step() -> None:
    assert torch.equal(al.positions_for_step(0, 4), torch.arange(4))
    assert torch.equal(al.positions_for_step(5, 1), torch.tensor([5]))
    assert torch.equal(al.positions_for_step(5, 3), torch.tensor([5, 6, 7]))
    assert al.positions_for_step(2, 2).dtype == torch.int64
    assert al.positions_for_step(2, 2, device="meta").device.type == "meta"


# --- position_ids and left padding -----------------------------------------------------------------------------


@given(
    offsets=st.lists(st.integers(0, 5000), min_size=1, max_size=3),
    num_tokens=st.integers(1, 10),
    layout=layouts,
    seed=seeds,
)
def test_shifting_a_sequences_positions_changes_nothing(
    offsets: list[int], num_tokens: int, layout: str, seed: int
) -> None:
    """The relative property, for the whole module: position_ids that start anywhere (one start per sequence)
    give the outputs of the default 0 .. num_tokens - 1."""
    torch.manual_seed(seed)
    module = al.RoPEAttention(6, 8, 0.0, 2, layout=layout).double()
    x = _randn(len(offsets), num_tokens, 6, seed=seed)
    default = module(x)
    torch.testing.assert_close(module(x, position_ids=torch.arange(num_tokens)), default, **TOL)
    position_ids = torch.tensor(offsets)[:, None] + torch.arange(num_tokens)  # (batch, num_tokens)
    torch.testing.assert_close(module(x, position_ids=position_ids), default, atol=1e-9, rtol=1e-9)


def test_position_zero_everywhere_is_multi_head_attention() -> None:
    """Rotating nothing leaves MultiHeadAttention, whose parameters are created in the same order."""
    torch.manual_seed(0)
    mha = al.MultiHeadAttention(6, 8, 5, 0.0, 2).double()
    torch.manual_seed(0)
    rope = al.RoPEAttention(6, 8, 0.0, 2).double()
    for (name, p), (name_mha, p_mha) in zip(rope.named_parameters(), mha.named_parameters(), strict=True):
        assert name == name_mha
        assert torch.equal(p, p_mha)
    x = _randn(2, 5, 6, seed=0)
    torch.testing.assert_close(rope(x, position_ids=torch.zeros(5, dtype=torch.long)), mha(x), **TOL)


@pytest.mark.parametrize("count_from_first_real_token", [True, False])
def test_a_left_padded_batch_gives_the_real_tokens_their_outputs(count_from_first_real_token: bool) -> None:
    """Sequence 1 is left-padded by 3 tokens; key_padding_mask (of every key so far) hides them, prompt and cached
    steps alike. Its real tokens get the outputs they get alone, whether their positions count from the first
    real token or from the padding (RoPE sees only distances). A query that sees only padding gets out_proj's
    bias (a context vector of zeros), not nan."""
    torch.manual_seed(0)
    module = al.RoPEAttention(4, 8, 0.0, 2, qkv_bias=True).double()
    pad, prompt, steps = 3, 4, 3
    x = _randn(2, pad + prompt + steps, 4, seed=1)
    alone = module(x[1:, pad:])  # (1, prompt + steps, d_out)
    padding = torch.zeros(2, pad + prompt + steps, dtype=torch.bool)
    padding[1, :pad] = True
    positions = torch.arange(pad + prompt + steps).repeat(2, 1)
    if count_from_first_real_token:
        positions[1] = (positions[1] - pad).clamp(min=0)
    # Prefill with padding, then one token at a time, the mask growing with the keys.
    outputs = [
        module(
            x[:, : pad + prompt],
            True,
            position_ids=positions[:, : pad + prompt],
            key_padding_mask=padding[:, : pad + prompt],
        )
    ]
    for end in range(pad + prompt + 1, pad + prompt + steps + 1):
        outputs.append(
            module(
                x[:, end - 1 : end], True, position_ids=positions[:, end - 1 : end], key_padding_mask=padding[:, :end]
            )
        )
    batched = torch.cat(outputs, dim=1)
    torch.testing.assert_close(batched[1:, pad:], alone, **TOL)
    torch.testing.assert_close(batched[0], module(x[:1])[0], **TOL)
    assert not batched.isnan().any()
    torch.testing.assert_close(batched[1, :pad], module.out_proj.bias.expand(pad, 8), **TOL)
    # Without the mask the real tokens would attend to the padding.
    unmasked = module(x[:, : pad + prompt], position_ids=positions[:, : pad + prompt])
    assert not torch.allclose(unmasked[1:, pad:], alone[:, :prompt])


# --- the cache's buffers ---------------------------------------------------------------------------------------


def test_the_cache_is_a_non_persistent_buffer_that_a_load_empties() -> None:
    module = al.RoPEAttention(4, 8, 0.0, 2)
    assert module.cache_k is None
    assert module.cache_v is None
    module(torch.randn(2, 3, 4), use_cache=True)
    buffers = dict(module.named_buffers())
    assert buffers["cache_k"] is module.cache_k
    assert buffers["cache_v"] is module.cache_v
    assert not any(name.startswith("cache_") for name in module.state_dict())
    module.double()  # buffers follow the module's dtype
    assert module.cache_k.dtype == torch.float64
    module(torch.randn(2, 1, 4, dtype=torch.float64), use_cache=True)
    assert num_cached(module) == 4
    module.load_state_dict(al.RoPEAttention(4, 8, 0.0, 2).double().state_dict())
    assert module.cache_k is None  # new weights make the cached keys stale
    module(torch.randn(2, 2, 4, dtype=torch.float64), use_cache=True)
    module.reset_cache()
    assert (module.cache_k, module.cache_v) == (None, None)


def test_sizes_are_kept_as_attributes() -> None:
    module = al.RoPEAttention(5, 12, 0.1, 3, layout="interleaved", base=500_000)
    assert (module.d_in, module.d_out, module.num_heads, module.head_dim) == (5, 12, 3, 4)
    assert (module.layout, module.base) == ("interleaved", 500_000.0)


def test_rope_attention_on_device(device: torch.device) -> None:
    case = Case(2, 8, 4, 8, [5, 1, 1, 3, 1], "half", True, 0)
    module, x = case.module().to(device), case.inputs().to(device)
    torch.testing.assert_close(decode(module, x, case.chunks), module(x), **TOL)
    assert module.cache_k.device.type == device.type


# --- parity with the RoPE code readers use, imported -----------------------------------------------------------


@pytest.fixture(scope="module")
def hf_llama() -> ModuleType:
    return pytest.importorskip("transformers.models.llama.modeling_llama", reason="needs transformers")


@pytest.fixture(scope="module")
def hf_gptj() -> ModuleType:
    return pytest.importorskip("transformers.models.gptj.modeling_gptj", reason="needs transformers")


@pytest.fixture(scope="module")
def book_llama3() -> ModuleType:
    return pytest.importorskip(
        "llms_from_scratch.llama3", reason="needs llms-from-scratch (pip install --no-deps) and tiktoken"
    )


@pytest.fixture(scope="module")
def book_llama3_cached() -> ModuleType:
    return pytest.importorskip(
        "llms_from_scratch.kv_cache.llama3", reason="needs llms-from-scratch (pip install --no-deps) and tiktoken"
    )


F32 = {"atol": 1e-5, "rtol": 1e-5}  # float32: both sides compute the same angles in float32

SIZES = {
    "head_dim": head_dims,
    "num_heads": st.integers(1, 4),
    "num_tokens": st.integers(1, 16),
    "batch": st.integers(1, 3),
    "start": st.integers(0, 2000),
    "seed": seeds,
}
parity = given(**SIZES, base=st.sampled_from([10_000.0, 500_000.0, 1_000_000.0]))


@parity
def test_half_layout_matches_hugging_face_llama(
    hf_llama: ModuleType,
    head_dim: int,
    num_heads: int,
    num_tokens: int,
    batch: int,
    start: int,
    base: float,
    seed: int,
) -> None:
    """LlamaRotaryEmbedding (built from a small LlamaConfig) and apply_rotary_pos_emb, with each sequence's
    position_ids starting elsewhere, as after a cache or with left padding."""
    config = hf_llama.LlamaConfig(
        hidden_size=num_heads * head_dim,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        head_dim=head_dim,
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    rotary = hf_llama.LlamaRotaryEmbedding(config)
    q = _randn(batch, num_heads, num_tokens, head_dim, seed=seed).float()
    k = _randn(batch, num_heads, num_tokens, head_dim, seed=seed + 1).float()
    position_ids = start + torch.arange(batch)[:, None] * 7 + torch.arange(num_tokens)  # (batch, num_tokens)
    cos, sin = rotary(q, position_ids)  # (batch, num_tokens, head_dim): each frequency twice
    q_hf, k_hf = hf_llama.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(al.apply_rope(q, position_ids, "half", base), q_hf, **F32)
    torch.testing.assert_close(al.apply_rope(k, position_ids, "half", base), k_hf, **F32)
    # Its tables are ours, each column twice: (cos_0 .. cos_(d/2-1), cos_0 .. cos_(d/2-1)).
    our_cos, our_sin = al.rope_cos_sin(head_dim, position_ids, base)
    torch.testing.assert_close(cos, torch.cat((our_cos, our_cos), dim=-1), **F32)
    torch.testing.assert_close(sin, torch.cat((our_sin, our_sin), dim=-1), **F32)
    # rotate_half is the half layout's partner: x * cos + rotate_half(x) * sin.
    torch.testing.assert_close(
        al.apply_rope(q, position_ids, "half", base), q * cos[:, None] + hf_llama.rotate_half(q) * sin[:, None], **F32
    )


@parity
def test_half_layout_matches_the_books_llama3(
    book_llama3: ModuleType,
    book_llama3_cached: ModuleType,
    head_dim: int,
    num_heads: int,
    num_tokens: int,
    batch: int,
    start: int,
    base: float,
    seed: int,
) -> None:
    """compute_rope_params and apply_rope of the book's Llama 3 (positions 0 .. num_tokens - 1), and the KV-cache
    version's apply_rope(x, cos, sin, offset) (positions offset .. offset + num_tokens - 1)."""
    cos, sin = book_llama3.compute_rope_params(head_dim, theta_base=base, context_length=start + num_tokens)
    x = _randn(batch, num_heads, num_tokens, head_dim, seed=seed).float()
    torch.testing.assert_close(
        al.apply_rope(x, torch.arange(num_tokens), "half", base), book_llama3.apply_rope(x, cos, sin), **F32
    )
    cached = book_llama3_cached.apply_rope(x, cos, sin, offset=start)
    torch.testing.assert_close(al.apply_rope(x, al.positions_for_step(start, num_tokens), "half", base), cached, **F32)
    if start > 0:  # and the offset is what makes it right
        assert not torch.allclose(al.apply_rope(x, torch.arange(num_tokens), "half", base), cached, **F32)


@given(**SIZES)
def test_interleaved_layout_matches_gpt_j(
    hf_gptj: ModuleType, head_dim: int, num_heads: int, num_tokens: int, batch: int, start: int, seed: int
) -> None:
    """GPT-J's create_sinusoidal_positions, rotate_every_two and apply_rotary_pos_emb (base 10,000, tensors laid
    out (batch, num_tokens, num_heads, head_dim)), as GPTJAttention calls them."""
    embed_positions = hf_gptj.create_sinusoidal_positions(start + 7 * batch + num_tokens, head_dim)
    position_ids = start + torch.arange(batch)[:, None] * 7 + torch.arange(num_tokens)  # (batch, num_tokens)
    sincos = embed_positions[position_ids]  # (batch, num_tokens, head_dim): sines, then cosines
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    x = _randn(batch, num_tokens, num_heads, head_dim, seed=seed).float()
    gptj = hf_gptj.apply_rotary_pos_emb(x, sin, cos)
    ours = al.apply_rope(x.transpose(1, 2), position_ids, "interleaved").transpose(1, 2)
    torch.testing.assert_close(ours, gptj, **F32)
    # And rotate_every_two is the interleaved layout's partner, as rotate_half is the half layout's.
    assert (
        head_dim == 2
        or position_ids.max() == 0
        or not torch.allclose(al.apply_rope(x.transpose(1, 2), position_ids, "half").transpose(1, 2), gptj, **F32)
    )


# --- bad arguments ---------------------------------------------------------------------------------------------

X = torch.randn(2, 3, 5, 8)  # (batch, num_heads, num_tokens, head_dim)
MODULE = al.RoPEAttention(4, 8, 0.0, 2)
INPUT = torch.randn(2, 5, 4)  # (batch, num_tokens, d_in)


def _refill_then(call: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        MODULE.reset_cache()
        MODULE(INPUT, use_cache=True)
        return call()

    return run


BAD: dict[str, tuple[Callable[[], object], type[Exception], str]] = {
    "odd head_dim": (
        lambda: al.rope_frequencies(7),
        ValueError,
        "head_dim must be even, got 7: RoPE rotates pairs of dimensions (choose d_out and num_heads so that "
        "d_out // num_heads is even)",
    ),
    "zero head_dim": (lambda: al.rope_frequencies(0), ValueError, "head_dim must be a positive integer, got 0"),
    "float head_dim": (
        lambda: al.interleaved_to_half(8.0),  # type: ignore[arg-type]
        TypeError,
        "head_dim must be a positive integer, got 8.0",
    ),
    "odd head_dim of x": (
        lambda: al.apply_rope(torch.randn(2, 5, 7), torch.arange(5)),
        ValueError,
        "head_dim must be even, got 7: RoPE rotates pairs of dimensions (choose d_out and num_heads so that "
        "d_out // num_heads is even)",
    ),
    "odd head_dim of a module": (
        lambda: al.RoPEAttention(4, 6, 0.0, 2),
        ValueError,
        "head_dim must be even, got 3: RoPE rotates pairs of dimensions (choose d_out and num_heads so that "
        "d_out // num_heads is even)",
    ),
    "unknown layout": (
        lambda: al.apply_rope(X, torch.arange(5), "rotate_half"),
        ValueError,
        "layout must be 'half' (pairs i, i + head_dim/2: Hugging Face's Llama) or 'interleaved' (pairs 2i, "
        "2i + 1: GPT-J), got 'rotate_half'",
    ),
    "unknown layout of a module": (
        lambda: al.RoPEAttention(4, 8, 0.0, 2, layout="neox"),
        ValueError,
        "layout must be 'half' (pairs i, i + head_dim/2: Hugging Face's Llama) or 'interleaved' (pairs 2i, "
        "2i + 1: GPT-J), got 'neox'",
    ),
    "base 1": (lambda: al.rope_frequencies(8, 1.0), ValueError, "base must be a number greater than 1, got 1.0"),
    "string base": (
        lambda: al.rope_cos_sin(8, torch.arange(3), "10000"),  # type: ignore[arg-type]
        TypeError,
        "base must be a number greater than 1, got '10000'",
    ),
    "integer table dtype": (
        lambda: al.rope_frequencies(8, dtype=torch.int64),
        TypeError,
        "dtype must be a floating-point dtype, got torch.int64",
    ),
    "float positions": (
        lambda: al.apply_rope(X, torch.arange(5.0)),
        TypeError,
        "positions must be an integer tensor (e.g. torch.arange(...), torch.int64), got dtype torch.float32",
    ),
    "boolean positions": (
        lambda: al.rope_cos_sin(8, torch.ones(5, dtype=torch.bool)),
        TypeError,
        "positions must be an integer tensor (e.g. torch.arange(...), torch.int64), got dtype torch.bool",
    ),
    "list positions": (
        lambda: al.apply_rope(X, [0, 1, 2, 3, 4]),  # type: ignore[arg-type]
        TypeError,
        "positions must be a torch.Tensor, got list",
    ),
    "3-D positions": (
        lambda: al.apply_rope(X, torch.zeros(2, 1, 5, dtype=torch.long)),
        ValueError,
        "positions must be a 1-D tensor of shape (num_tokens,) or a 2-D tensor of shape (batch, num_tokens), "
        "got a 3-D tensor of shape (2, 1, 5)",
    ),
    "positions for another number of tokens": (
        lambda: al.apply_rope(X, torch.arange(4)),
        ValueError,
        "positions must hold one position per token (5 tokens), got shape (4,)",
    ),
    "positions for another batch": (
        lambda: al.apply_rope(X, torch.zeros(3, 5, dtype=torch.long)),
        ValueError,
        "positions of shape (batch, num_tokens) = (3, 5) needs x of shape (batch, ..., num_tokens, head_dim) with "
        "the same batch size, got x with batch size 2",
    ),
    "per-sequence positions for an unbatched x": (
        lambda: al.apply_rope(torch.randn(5, 8), torch.zeros(1, 5, dtype=torch.long)),
        ValueError,
        "positions of shape (batch, num_tokens) = (1, 5) needs x of shape (batch, ..., num_tokens, head_dim) with "
        "the same batch size, got x with batch size none",
    ),
    "integer x": (
        lambda: al.apply_rope(torch.ones(2, 5, 8, dtype=torch.long), torch.arange(5)),
        TypeError,
        "x must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; token ids must go through "
        "an embedding layer first",
    ),
    "negative num_cached": (
        lambda: al.positions_for_step(-1, 2),
        ValueError,
        "num_cached must be a non-negative integer, got -1",
    ),
    "float num_cached": (
        lambda: al.positions_for_step(3.0, 2),  # type: ignore[arg-type]
        TypeError,
        "num_cached must be a non-negative integer, got 3.0",
    ),
    "zero num_tokens": (
        lambda: al.positions_for_step(3, 0),
        ValueError,
        "num_tokens must be a positive integer, got 0",
    ),
    "float position_ids": (
        lambda: MODULE(INPUT, position_ids=torch.arange(5.0)),
        TypeError,
        "position_ids must be an integer tensor (e.g. torch.arange(...), torch.int64), got dtype torch.float32",
    ),
    "position_ids for another batch": (
        lambda: MODULE(INPUT, position_ids=torch.zeros(3, 5, dtype=torch.long)),
        ValueError,
        "position_ids of shape (batch, num_tokens) = (3, 5) needs x of shape (batch, ..., num_tokens, head_dim) "
        "with the same batch size, got x with batch size 2",
    ),
    "position_ids for another number of tokens": (
        lambda: MODULE(INPUT, position_ids=torch.arange(6)),
        ValueError,
        "position_ids must hold one position per token (5 tokens), got shape (6,)",
    ),
    "key_padding_mask of the new tokens only, after a cache": (
        _refill_then(lambda: MODULE(INPUT[:, :1], True, key_padding_mask=torch.zeros(2, 1, dtype=torch.bool))),
        ValueError,
        "key_padding_mask must have shape (2, 6), got (2, 1)",
    ),
    "float key_padding_mask": (
        lambda: MODULE(INPUT, key_padding_mask=torch.zeros(2, 5)),
        TypeError,
        "key_padding_mask must be a boolean tensor (True = masked out), got dtype torch.float32",
    ),
    "another batch after the cache": (
        _refill_then(lambda: MODULE(torch.randn(3, 1, 4), use_cache=True)),
        ValueError,
        "x has batch size 3, but the KV cache holds 2 sequences; a cache continues the same sequences: call "
        "reset_cache() before starting new ones",
    ),
}


@pytest.mark.parametrize(("call", "error", "message"), BAD.values(), ids=BAD.keys())
def test_bad_arguments_raise_a_clear_error(call: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as excinfo:
        call()
    assert str(excinfo.value) == message
