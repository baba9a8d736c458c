"""Masks beyond causal: the sliding window, packed documents, left padding, their FlexAttention forms, ALiBi,
and the ring-buffer cache of sliding-window attention.

Each mask is checked against its rule written as loops over (query, key), then in attention: through
scaled_dot_product_attention (to_sdpa_mask) against masked_softmax, through FlexAttention's mask_mod against
SDPA, and in what it is for: packed documents attend as if alone, a left-padded batch gives each sequence its
outputs alone, and the ring buffer gives the outputs of a cache of every token with the sliding window mask.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attention_lib as al

TOL = {"atol": 1e-12, "rtol": 1e-10}  # float64
#: flex_attention warns, every call, that without torch.compile it runs unfused: what these tests want.
FLEX_EAGER = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile:UserWarning")


@pytest.fixture(scope="module")  # module-scoped: hypothesis draws many examples per test call
def flex() -> ModuleType:
    """torch.nn.attention.flex_attention (PyTorch 2.5 and later), imported by the tests that use it: it imports
    torch._dynamo (about 1 s), which every process that only collects this file would otherwise pay for."""
    return pytest.importorskip("torch.nn.attention.flex_attention")


# --- the rules, as loops ------------------------------------------------------------------------------------


def rule_mask(num_queries: int, num_keys: int, hidden: Callable[[int, int], bool]) -> torch.Tensor:
    """The (num_queries, num_keys) mask, True where ``hidden(query position, key)``; the queries are the last
    ``num_queries`` positions."""
    offset = num_keys - num_queries
    return torch.tensor([[hidden(i + offset, j) for j in range(num_keys)] for i in range(num_queries)])


def sliding_window_rule(num_queries: int, window: int, num_keys: int) -> torch.Tensor:
    # Hugging Face's sliding_window_overlay allows kv_idx > q_idx - window, with the causal kv_idx <= q_idx.
    return rule_mask(num_queries, num_keys, lambda i, j: not (i - window < j <= i))


def document_rule(ids: list[int]) -> torch.Tensor:
    n = len(ids)
    return rule_mask(n, n, lambda i, j: j > i or ids[j] != ids[i])


def left_padded_rule(valid_lens: list[int], num_queries: int, num_keys: int) -> torch.Tensor:
    return torch.stack(
        [rule_mask(num_queries, num_keys, lambda i, j, n=n: j > i or j < num_keys - n) for n in valid_lens]
    )


# --- the masks against their rules ---------------------------------------------------------------------------


def test_sliding_window_of_three() -> None:
    """Each query sees itself and the two keys before it; with a cache, the queries are the last positions."""
    assert al.sliding_window_mask(5, window=3).int().tolist() == [
        [0, 1, 1, 1, 1],
        [0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1],
        [1, 0, 0, 0, 1],
        [1, 1, 0, 0, 0],
    ]
    assert al.sliding_window_mask(2, 3, num_keys=5).int().tolist() == [[1, 0, 0, 0, 1], [1, 1, 0, 0, 0]]
    assert al.sliding_window_mask(3, window=1).equal(~torch.eye(3, dtype=torch.bool))


@given(num_queries=st.integers(1, 9), extra=st.integers(0, 5), window=st.integers(1, 16))
def test_sliding_window_mask_follows_its_rule(num_queries: int, extra: int, window: int) -> None:
    num_keys = num_queries + extra
    mask = al.sliding_window_mask(num_queries, window, num_keys)
    assert mask.dtype == torch.bool
    assert mask.equal(sliding_window_rule(num_queries, window, num_keys))
    # A query sees window keys once that many exist: window counts the query itself.
    last_row_sees = (~mask[-1]).sum().item()
    assert last_row_sees == min(window, num_keys)
    if window >= num_keys:
        assert mask.equal(al.causal_mask(num_queries, num_keys, align="lower_right"))


def test_document_ids_from_lengths() -> None:
    assert al.document_ids_from_lengths([2, 3, 1]).tolist() == [0, 0, 1, 1, 1, 2]
    assert al.document_ids_from_lengths((4,)).tolist() == [0, 0, 0, 0]


def test_document_mask_of_two_documents() -> None:
    assert al.document_mask(torch.tensor([0, 0, 1, 1, 1])).int().tolist() == [
        [0, 1, 1, 1, 1],
        [0, 0, 1, 1, 1],
        [1, 1, 0, 1, 1],
        [1, 1, 0, 0, 1],
        [1, 1, 0, 0, 0],
    ]


lengths_lists = st.lists(st.integers(1, 4), min_size=1, max_size=4)


@st.composite
def document_id_rows(draw: st.DrawFn) -> torch.Tensor:
    """Ids of shape (num_tokens,) or (batch, num_tokens): runs, as packing gives, or any ids at all."""
    num_tokens, batch = draw(st.integers(1, 9)), draw(st.integers(1, 3))
    runs = st.lists(st.integers(0, 3), min_size=num_tokens, max_size=num_tokens).map(sorted)
    any_ids = st.lists(st.integers(-2, 2), min_size=num_tokens, max_size=num_tokens)
    rows = draw(st.lists(st.one_of(runs, any_ids), min_size=batch, max_size=batch))
    ids = torch.tensor(rows)
    return ids[0] if draw(st.booleans()) else ids


@given(ids=document_id_rows())
def test_document_mask_follows_its_rule(ids: torch.Tensor) -> None:
    """Any ids, not only runs: a token sees the earlier tokens that carry its id."""
    num_tokens = ids.shape[-1]
    mask = al.document_mask(ids)
    assert mask.shape == (*ids.shape[:-1], num_tokens, num_tokens)
    expected = torch.stack([document_rule(row.tolist()) for row in ids.reshape(-1, num_tokens)])
    assert mask.reshape(-1, num_tokens, num_tokens).equal(expected)


@given(num_tokens=st.integers(1, 9), document=st.integers(-3, 3))
def test_one_document_is_the_causal_mask(num_tokens: int, document: int) -> None:
    ids = torch.full((num_tokens,), document)
    assert al.document_mask(ids).equal(al.causal_mask(num_tokens))
    assert al.document_mask(ids[None].expand(2, -1)).equal(al.causal_mask(num_tokens).expand(2, -1, -1))


@settings(max_examples=40)  # each example attends several times
@given(lengths=lengths_lists, seed=st.integers(0, 2**16))
def test_packed_documents_attend_as_if_each_were_alone(lengths: list[int], seed: int) -> None:
    """What the document mask is for: attention over the packed sequence gives, for each document, what causal
    attention over that document alone gives."""
    gen = torch.Generator().manual_seed(seed)
    n = sum(lengths)
    q, k, v = (torch.randn(2, 2, n, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    mask = al.document_mask(al.document_ids_from_lengths(lengths))
    packed = F.scaled_dot_product_attention(q, k, v, attn_mask=al.to_sdpa_mask(mask))
    start = 0
    for length in lengths:
        piece = slice(start, start + length)
        alone = F.scaled_dot_product_attention(q[:, :, piece], k[:, :, piece], v[:, :, piece], is_causal=True)
        torch.testing.assert_close(packed[:, :, piece], alone, **TOL)
        start += length
    if len(lengths) > 1 and lengths[1] > 0:  # the causal mask alone lets the second document read the first
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert not torch.allclose(causal[:, :, lengths[0] :], packed[:, :, lengths[0] :])


def test_left_padding_of_three_sequences() -> None:
    valid_lens = torch.tensor([3, 1, 4])
    assert al.left_padding_mask(valid_lens, 4)[:, 0].int().tolist() == [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]]
    assert al.left_padding_position_ids(valid_lens, 4).tolist() == [[0, 0, 1, 2], [0, 0, 0, 0], [0, 1, 2, 3]]
    # The padding query (row 0 of sequence 0) has every key masked.
    assert al.left_padded_causal_mask(valid_lens, 4)[0].int().tolist() == [
        [1, 1, 1, 1],
        [1, 0, 1, 1],
        [1, 0, 0, 1],
        [1, 0, 0, 0],
    ]


@given(
    valid_lens=st.lists(st.integers(0, 7), min_size=1, max_size=4),
    pad=st.integers(0, 3),
    num_queries=st.integers(1, 10),
    as_float=st.booleans(),
)
def test_left_padding_follows_its_rule(valid_lens: list[int], pad: int, num_queries: int, as_float: bool) -> None:
    num_keys = max(valid_lens) + pad + 1
    num_queries = min(num_queries, num_keys)
    lens = torch.tensor(valid_lens, dtype=torch.float64 if as_float else torch.long)
    mask = al.left_padding_mask(lens, num_keys)
    assert mask.shape == (len(valid_lens), 1, num_keys)
    expected = [[j < num_keys - n for j in range(num_keys)] for n in valid_lens]
    assert mask[:, 0].tolist() == expected
    ids = al.left_padding_position_ids(lens, num_keys)
    assert ids.dtype == torch.long
    assert ids.tolist() == [[max(j - (num_keys - n), 0) for j in range(num_keys)] for n in valid_lens]
    combined = al.left_padded_causal_mask(lens, num_queries, num_keys)
    assert combined.equal(left_padded_rule(valid_lens, num_queries, num_keys))
    assert combined.equal(al.causal_mask(num_queries, num_keys, align="lower_right") | mask)


# --- each mask in SDPA and in masked_softmax -----------------------------------------------------------------


def sdpa_with(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """SDPA with a mask of the library, (num_queries, num_keys) or (batch, num_queries, num_keys), the same for
    every head; zeros for a query whose every key is masked, as MultiHeadAttention fills them (PyTorch 2.13's CPU
    kernels return zeros there, some older versions and GPU kernels nan)."""
    heads_mask = mask[:, None] if mask.dim() == 3 else mask  # (batch, 1, q, k)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=al.to_sdpa_mask(heads_mask))
    return out.masked_fill(heads_mask.all(dim=-1, keepdim=True), 0.0)


def masks_of_every_kind(gen: torch.Generator, batch: int, num_queries: int, extra: int) -> dict[str, torch.Tensor]:
    """One mask of each kind, (batch, num_queries, num_keys) or broadcasting to it."""
    num_keys = num_queries + extra
    window = int(torch.randint(1, num_keys + 2, (), generator=gen))
    ids = torch.randint(0, 3, (batch, num_keys), generator=gen).sort(dim=-1).values
    lens = torch.randint(0, num_keys + 1, (batch,), generator=gen)
    return {
        "sliding_window": al.sliding_window_mask(num_queries, window, num_keys),
        "document": al.document_mask(ids)[:, -num_queries:],  # the last queries, as after a cache
        "left_padded_causal": al.left_padded_causal_mask(lens, num_queries, num_keys),
    }


@settings(max_examples=40)  # each example attends several times
@given(batch=st.integers(1, 3), num_queries=st.integers(1, 7), extra=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_each_mask_gives_sdpa_what_it_gives_masked_softmax(batch: int, num_queries: int, extra: int, seed: int) -> None:
    """to_sdpa_mask turns every mask into SDPA's convention; a row with every key masked (a padding query) comes
    out as zeros from masked_softmax (and from SDPA once its nan, where a kernel gives one, is zeroed)."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, 2, num_queries, 4, generator=gen, dtype=torch.float64)
    k, v = (torch.randn(batch, 2, num_queries + extra, 4, generator=gen, dtype=torch.float64) for _ in range(2))
    for name, mask in masks_of_every_kind(gen, batch, num_queries, extra).items():
        heads_mask = mask[:, None] if mask.dim() == 3 else mask  # (batch, 1, q, k): the same for every head
        weights = al.masked_softmax(q @ k.transpose(-2, -1) / 2.0, heads_mask)  # scale 1/sqrt(4)
        ours = weights @ v
        torch.testing.assert_close(sdpa_with(q, k, v, mask), ours, **TOL, msg=name)
        empty_rows = heads_mask.all(dim=-1).expand(batch, 2, num_queries)
        assert (ours[empty_rows] == 0).all(), name


# --- a left-padded batch: each sequence as if alone ----------------------------------------------------------


class TinyModel(nn.Module):
    """Token and learned position embeddings, then MultiHeadAttention: outputs that depend on the positions."""

    def __init__(self, vocab: int = 13, context_length: int = 16, d: int = 8, num_heads: int = 2) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d, dtype=torch.float64)
        self.pos = nn.Embedding(context_length, d, dtype=torch.float64)
        self.attn = al.MultiHeadAttention(d, d, context_length, 0.0, num_heads).double()

    def embed(self, ids: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        return self.tok(ids) + self.pos(position_ids)

    def forward(
        self, ids: torch.Tensor, position_ids: torch.Tensor, padding: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.attn(self.embed(ids, position_ids), padding)

    def attend(self, x: torch.Tensor, num_queries: int, mask: torch.Tensor) -> torch.Tensor:
        """The last ``num_queries`` tokens of ``x`` against all of them, with ``mask`` (batch, num_queries, num_keys):
        what a step with a full KV cache computes."""
        attn = self.attn
        q = al.split_heads(attn.W_query(x[:, -num_queries:]), attn.num_heads)
        k, v = (al.split_heads(proj(x), attn.num_heads) for proj in (attn.W_key, attn.W_value))
        weights = al.masked_softmax(q @ k.transpose(-2, -1) / attn.head_dim**0.5, mask[:, None])
        return attn.out_proj(al.merge_heads(weights @ v))


@settings(max_examples=30)
@given(valid_lens=st.lists(st.integers(1, 7), min_size=2, max_size=4), steps=st.integers(0, 3), seed=st.integers(0, 99))
def test_a_left_padded_batch_gives_each_sequence_its_outputs_alone(
    valid_lens: list[int], steps: int, seed: int
) -> None:
    """Padded on the left, with position ids from 0 at the first real token and the padding masked, each
    sequence's outputs are those of the sequence run alone: for the prompt in one forward (MultiHeadAttention
    with the padding as key_padding_mask, or left_padded_causal_mask by hand), and for each token generated
    after it (one query against every key, the mask aligned bottom-right)."""
    torch.manual_seed(seed)
    model = TinyModel().eval()
    num_tokens = max(valid_lens) + (min(valid_lens) == max(valid_lens))  # at least one sequence padded
    lens = torch.tensor(valid_lens)
    sequences = [torch.randint(1, 13, (n + steps,)) for n in valid_lens]  # each prompt, then its generated tokens
    ids = torch.stack([F.pad(seq[:n], (num_tokens - n, 0)) for seq, n in zip(sequences, valid_lens, strict=True)])
    positions = al.left_padding_position_ids(lens, num_tokens)
    alone = [model(seq[None], torch.arange(len(seq))[None])[0] for seq in sequences]

    with torch.no_grad():
        batch = model(ids, positions, al.left_padding_mask(lens, num_tokens)[:, 0])
        by_hand = model.attend(model.embed(ids, positions), num_tokens, al.left_padded_causal_mask(lens, num_tokens))
        for b, n in enumerate(valid_lens):
            torch.testing.assert_close(batch[b, num_tokens - n :], alone[b][:n], **TOL)
            torch.testing.assert_close(by_hand[b, num_tokens - n :], alone[b][:n], **TOL)
        # Without the position ids, or without the mask, a padded sequence's outputs change.
        padded = [b for b, n in enumerate(valid_lens) if n < num_tokens]
        plain_positions = torch.arange(num_tokens).expand(len(valid_lens), -1)
        for wrong in (model(ids, plain_positions, al.left_padding_mask(lens, num_tokens)[:, 0]), model(ids, positions)):
            assert not all(
                torch.allclose(wrong[b, num_tokens - valid_lens[b] :], alone[b][: valid_lens[b]]) for b in padded
            )

        # Generating: each step appends one token to every sequence, at the same column.
        for step in range(1, steps + 1):
            new = torch.stack([seq[n + step - 1] for seq, n in zip(sequences, valid_lens, strict=True)])[:, None]
            ids = torch.cat([ids, new], dim=1)
            lens_now = lens + step
            positions = al.left_padding_position_ids(lens_now, ids.shape[1])
            mask = al.left_padded_causal_mask(lens_now, 1, ids.shape[1])  # (batch, 1, num_keys)
            out = model.attend(model.embed(ids, positions), 1, mask)
            for b, n in enumerate(valid_lens):
                torch.testing.assert_close(out[b, 0], alone[b][n + step - 1], **TOL)


# --- the ring-buffer cache of sliding-window attention -------------------------------------------------------


@st.composite
def decodings(draw: st.DrawFn) -> tuple[int, list[int]]:
    """A window, and the token counts of each step: a prompt (possibly longer than the window), then mostly one
    token at a time, sometimes a chunk."""
    window = draw(st.integers(1, 6))
    chunks = [draw(st.integers(1, 12))]
    for _ in range(draw(st.integers(0, 10))):
        chunks.append(draw(st.one_of(st.just(1), st.integers(1, 5))))
    return window, chunks


@given(case=decodings(), batch=st.integers(1, 2), heads=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_the_ring_buffer_gives_what_a_full_cache_with_the_window_mask_gives(
    case: tuple[int, list[int]], batch: int, heads: int, seed: int
) -> None:
    """At every step, prefill included: the same outputs as attending to every token so far with the sliding
    window mask, in window slots. Attending to every token with the causal mask alone differs once the
    sequence is longer than the window, so the comparison can fail."""
    window, chunks = case
    gen = torch.Generator().manual_seed(seed)
    total = sum(chunks)
    q, k, v = (torch.randn(batch, heads, total, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    cache = al.SlidingWindowKVCache(batch, heads, window, 4, dtype=torch.float64)
    ring, full, causal_only = [], [], []
    start = 0
    for t in chunks:
        end = start + t
        keys, values, mask = cache.update(k[:, :, start:end], v[:, :, start:end])
        expected_keys = 1 + min(start, window - 1) if t == 1 else min(start, window) + t
        assert keys.shape == values.shape == (batch, heads, expected_keys, 4)
        assert (mask is None) == (t == 1)
        attn_mask = None if mask is None else al.to_sdpa_mask(mask)
        ring.append(F.scaled_dot_product_attention(q[:, :, start:end], keys, values, attn_mask=attn_mask))
        window_mask = al.to_sdpa_mask(al.sliding_window_mask(t, window, end))
        full.append(
            F.scaled_dot_product_attention(q[:, :, start:end], k[:, :, :end], v[:, :, :end], attn_mask=window_mask)
        )
        causal = al.to_sdpa_mask(al.causal_mask(t, end, align="lower_right"))
        causal_only.append(
            F.scaled_dot_product_attention(q[:, :, start:end], k[:, :, :end], v[:, :, :end], attn_mask=causal)
        )
        start = end
        assert cache.num_seen == end
        assert cache.keys.shape == (batch, heads, window, 4)  # never grows
    torch.testing.assert_close(torch.cat(ring, dim=2), torch.cat(full, dim=2), **TOL)
    if total > window:
        assert not torch.allclose(torch.cat(causal_only, dim=2), torch.cat(ring, dim=2))


def test_the_ring_buffer_writes_position_p_into_slot_p_mod_window() -> None:
    """Keys that carry their own position show the layout: after positions 0..6 in a window of 3, slots 0, 1, 2
    hold positions 6, 4, 5; a chunk longer than the window keeps only its last window tokens."""
    cache = al.SlidingWindowKVCache(1, 1, 3, 1, dtype=torch.float64)

    def at(positions: range) -> torch.Tensor:
        return torch.tensor([float(p) for p in positions], dtype=torch.float64).view(1, 1, -1, 1)

    keys, _, mask = cache.update(at(range(5)), at(range(5)))  # a prompt of 5 > window
    assert keys.flatten().tolist() == [0, 1, 2, 3, 4]
    assert mask is not None
    assert mask.equal(al.sliding_window_mask(5, 3))
    assert cache.keys.flatten().tolist() == [3, 4, 2]
    keys, _, mask = cache.update(at(range(5, 6)), at(range(5, 6)))
    assert mask is None
    assert keys.flatten().tolist() == [3, 4, 5]  # slot 2 = position 5, over position 2
    cache.update(at(range(6, 7)), at(range(6, 7)))
    assert cache.keys.flatten().tolist() == [6, 4, 5]
    keys, _, mask = cache.update(at(range(7, 9)), at(range(7, 9)))  # a chunk: the cache in order, then it
    assert keys.flatten().tolist() == [4, 5, 6, 7, 8]
    assert mask is not None
    assert mask.equal(al.sliding_window_mask(2, 3, 5))
    cache.reset()
    keys, _, _ = cache.update(at(range(1)), at(range(1)))
    assert keys.flatten().tolist() == [0]


def test_a_ring_buffer_on_the_meta_device_keeps_everything_there() -> None:
    """meta, a device every machine has, stands for a GPU: a buffer, a mask or slot indices allocated on the
    default device instead of the keys' would be CPU tensors (and index_copy_ would refuse them)."""
    cache = al.SlidingWindowKVCache(1, 2, 3, 4, device="meta")
    assert cache.keys.device.type == cache.values.device.type == "meta"
    for t in (5, 1, 2, 1):
        keys, values, mask = cache.update(
            torch.empty(1, 2, t, 4, device="meta"), torch.empty(1, 2, t, 4, device="meta")
        )
        assert {keys.device.type, values.device.type} == {"meta"}
        assert mask is None or mask.device.type == "meta"


@pytest.mark.parametrize("size", ["batch", "num_kv_heads", "window", "head_dim"])
@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (2.0, TypeError)])
def test_a_ring_buffer_of_no_size_is_refused(size: str, value: object, error: type[Exception]) -> None:
    sizes: dict[str, object] = {"batch": 1, "num_kv_heads": 1, "window": 4, "head_dim": 2, size: value}
    with pytest.raises(error, match=f"^{size} must be a positive integer, got {value}$"):
        al.SlidingWindowKVCache(**sizes)  # type: ignore[arg-type]


def test_the_ring_buffer_is_state_of_one_generation() -> None:
    cache = al.SlidingWindowKVCache(2, 2, 4, 3)
    assert cache.state_dict() == {}
    half = cache.to(torch.float16)
    assert half.keys.dtype == half.values.dtype == torch.float16


# --- FlexAttention: mask_mod and score_mod -------------------------------------------------------------------


def indices(batch: int, heads: int, num_queries: int, num_keys: int) -> tuple[torch.Tensor, ...]:
    """b, h, q_idx, kv_idx as broadcasting aranges, (batch, 1, 1, 1) ... (1, 1, 1, num_keys): a mask_mod or a
    score_mod made of tensor operations evaluates at every index at once, without FlexAttention."""
    sizes = (batch, heads, num_queries, num_keys)
    return tuple(torch.arange(n).view([n if d == dim else 1 for d in range(4)]) for dim, n in enumerate(sizes))


def test_mask_mods_and_the_score_mod_evaluated_directly_without_flex_attention() -> None:
    """The same functions as plain tensor code (any PyTorch, FlexAttention or not): each mask_mod is its mask
    negated, and the score_mod adds the bias tensor."""
    b, h, q, kv = indices(2, 3, 4, 7)
    lens = torch.tensor([5, 0])
    ids = torch.tensor([[0, 0, 1, 1, 1, 2, 2], [0, 1, 1, 1, 1, 1, 1]])
    pairs = [
        (al.causal_mask_mod(3), al.causal_mask(4, 7, align="lower_right")),
        (al.sliding_window_mask_mod(2, 3), al.sliding_window_mask(4, 2, 7)),
        (al.left_padding_mask_mod(lens, 7), al.left_padding_mask(lens, 7)[:, None]),
    ]
    for mask_mod, mask in pairs:
        assert mask_mod(b, h, q, kv).expand(2, 3, 4, 7).equal(~mask.expand(2, 3, 4, 7))
    b, h, q, kv = indices(2, 1, 7, 7)
    assert al.document_mask_mod(ids)(b, h, q, kv)[:, 0].equal(~al.document_mask(ids))
    assert (
        al.document_mask_mod(ids[1])(b, h, q, kv)
        .expand(2, 1, 7, 7)[:, 0]
        .equal(~al.document_mask(ids[1]).expand(2, 7, 7))
    )
    scores = torch.randn(2, 3, 4, 7, dtype=torch.float64)
    b, h, q, kv = indices(2, 3, 4, 7)
    modified = al.alibi_score_mod(3, q_offset=3)(scores, b, h, q, kv)
    assert modified.dtype == torch.float64
    torch.testing.assert_close(modified, scores + al.alibi_bias(3, 4, 7).double())
    # By default the queries are the keys (q_offset=0); the score keeps its dtype, bfloat16 included.
    b, h, q, kv = indices(1, 3, 5, 5)
    half = torch.zeros(1, 3, 5, 5, dtype=torch.bfloat16)
    modified = al.alibi_score_mod(3)(half, b, h, q, kv)
    assert modified.dtype == torch.bfloat16
    torch.testing.assert_close(modified, al.alibi_bias(3, 5)[None].to(torch.bfloat16))


def materialize(flex: ModuleType, mask_mod: al.flex_masks.MaskMod, batch: int, num_queries: int, num_keys: int):
    """The mask_mod evaluated at every (b, q_idx, kv_idx), True = allowed: (batch, num_queries, num_keys)."""
    return flex.create_mask(mask_mod, batch, 1, num_queries, num_keys, device="cpu")[:, 0]


@settings(max_examples=25)  # create_mask evaluates the mask_mod under vmap, 6 times an example
@given(
    batch=st.integers(1, 3),
    num_queries=st.integers(1, 8),
    extra=st.integers(0, 4),
    window=st.integers(1, 10),
    seed=st.integers(0, 2**16),
)
def test_each_mask_mod_allows_exactly_what_its_mask_hides_not(
    flex: ModuleType, batch: int, num_queries: int, extra: int, window: int, seed: int
) -> None:
    """mask_mod(b, h, i, j) == ~mask[b, i, j] at every index: FlexAttention's True is "may attend"."""
    gen = torch.Generator().manual_seed(seed)
    num_keys = num_queries + extra
    offset = extra  # the queries are the last positions
    ids = torch.randint(0, 3, (batch, num_keys), generator=gen).sort(dim=-1).values
    lens = torch.randint(0, num_keys + 1, (batch,), generator=gen)
    causal = al.causal_mask(num_queries, num_keys, align="lower_right")
    pairs = [
        (al.causal_mask_mod(offset), causal),
        (al.sliding_window_mask_mod(window, offset), al.sliding_window_mask(num_queries, window, num_keys)),
        (al.left_padding_mask_mod(lens, num_keys), al.left_padding_mask(lens, num_keys)),
        (
            flex.and_masks(al.causal_mask_mod(offset), al.left_padding_mask_mod(lens, num_keys)),
            al.left_padded_causal_mask(lens, num_queries, num_keys),
        ),
    ]
    for mask_mod, mask in pairs:
        assert materialize(flex, mask_mod, batch, num_queries, num_keys).equal(~mask.expand(batch, num_queries, -1))
    square = num_keys  # the document mask: queries and keys are the same tokens
    assert materialize(flex, al.document_mask_mod(ids), batch, square, square).equal(~al.document_mask(ids))
    one_row = ids[0]
    assert materialize(flex, al.document_mask_mod(one_row), batch, square, square).equal(
        ~al.document_mask(one_row).expand(batch, -1, -1)
    )


def flex_cases(flex: ModuleType) -> dict[str, tuple[al.flex_masks.MaskMod, torch.Tensor, int, int]]:
    """mask_mod, the library's mask (broadcasting to (batch, q, k)), num_queries, num_keys; batch 2."""
    ids = al.document_ids_from_lengths([3, 5, 1, 4])[None].expand(2, -1).clone()
    ids[1] = al.document_ids_from_lengths([6, 7])
    lens = torch.tensor([9, 4])
    return {
        "causal": (al.causal_mask_mod(), al.causal_mask(13), 13, 13),
        "causal after a cache": (al.causal_mask_mod(8), al.causal_mask(5, 13, align="lower_right"), 5, 13),
        "sliding window": (al.sliding_window_mask_mod(4), al.sliding_window_mask(13, 4), 13, 13),
        "sliding window after a cache": (al.sliding_window_mask_mod(4, 10), al.sliding_window_mask(3, 4, 13), 3, 13),
        "document": (al.document_mask_mod(ids), al.document_mask(ids), 13, 13),
        "left padding": (
            flex.and_masks(al.causal_mask_mod(), al.left_padding_mask_mod(lens, 13)),
            al.left_padded_causal_mask(lens, 13),
            13,
            13,
        ),
    }


CASES = [
    "causal",
    "causal after a cache",
    "sliding window",
    "sliding window after a cache",
    "document",
    "left padding",
]


@FLEX_EAGER
@pytest.mark.parametrize("case", CASES)
def test_flex_attention_with_each_mask_mod_equals_sdpa_with_the_mask(flex: ModuleType, case: str) -> None:
    """create_block_mask + flex_attention (eager: unfused, the scores materialized) against SDPA with the
    library's mask, on the same inputs; flex_attention gives zeros for the rows with every key masked (padding
    queries), as masked_softmax does."""
    mask_mod, mask, num_queries, num_keys = flex_cases(flex)[case]
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 2, num_queries, 8, generator=gen, dtype=torch.float64)
    k, v = (torch.randn(2, 2, num_keys, 8, generator=gen, dtype=torch.float64) for _ in range(2))
    block_mask = flex.create_block_mask(mask_mod, 2, None, num_queries, num_keys, device="cpu")
    ours = flex.flex_attention(q, k, v, block_mask=block_mask)
    torch.testing.assert_close(ours, sdpa_with(q, k, v, mask), **TOL)


def papers_slopes(n: int) -> list[float]:
    """The ALiBi paper's get_slopes (ofirpress/attention_with_linear_biases), as written there."""

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + papers_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("num_heads", range(1, 17))
def test_alibi_slopes_are_the_papers(num_heads: int) -> None:
    slopes = al.alibi_slopes(num_heads)
    assert slopes.shape == (num_heads,)
    torch.testing.assert_close(slopes, torch.tensor(papers_slopes(num_heads)))


def test_alibi_slopes_of_eight_heads_halve() -> None:
    assert al.alibi_slopes(8).tolist() == [1 / 2**i for i in range(1, 9)]


@given(num_heads=st.integers(1, 6), num_queries=st.integers(1, 6), extra=st.integers(0, 3))
def test_alibi_bias_follows_its_rule(num_heads: int, num_queries: int, extra: int) -> None:
    num_keys = num_queries + extra
    bias = al.alibi_bias(num_heads, num_queries, num_keys)
    slopes = papers_slopes(num_heads)
    expected = [
        [[slopes[h] * (j - (i + extra)) for j in range(num_keys)] for i in range(num_queries)] for h in range(num_heads)
    ]
    torch.testing.assert_close(bias, torch.tensor(expected))


@FLEX_EAGER
@pytest.mark.parametrize(("num_queries", "num_keys"), [(9, 9), (3, 9)])
def test_alibi_score_mod_equals_sdpa_with_the_bias(flex: ModuleType, num_queries: int, num_keys: int) -> None:
    """The score_mod adds, inside flex_attention, what the bias tensor adds as SDPA's float attn_mask (with the
    causal mask as -inf); without the bias the outputs differ."""
    offset = num_keys - num_queries
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, num_queries, 8, generator=gen, dtype=torch.float64)
    k, v = (torch.randn(2, 4, num_keys, 8, generator=gen, dtype=torch.float64) for _ in range(2))
    block_mask = flex.create_block_mask(al.causal_mask_mod(offset), None, None, num_queries, num_keys, device="cpu")
    ours = flex.flex_attention(q, k, v, score_mod=al.alibi_score_mod(4, offset), block_mask=block_mask)
    causal = al.causal_mask(num_queries, num_keys, align="lower_right")
    bias = al.alibi_bias(4, num_queries, num_keys).double().masked_fill(causal, float("-inf"))
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=bias), **TOL)
    plain = F.scaled_dot_product_attention(q, k, v, attn_mask=al.to_sdpa_mask(causal))
    assert not torch.allclose(ours, plain)


@pytest.mark.compiles
@FLEX_EAGER  # create_block_mask's own flex calls
def test_the_mask_mods_and_the_score_mod_compile_in_one_graph(flex: ModuleType) -> None:
    """torch.compile traces each mask_mod and the score_mod whole (fullgraph): the tensors they read and the
    Python numbers they close over are no graph break. backend="aot_eager" traces as inductor does, without
    generating code: on this CPU, inductor's compile of flex_attention takes about 25 s, so the fused kernel is
    left to the gpu test."""
    torch._dynamo.reset()
    step = torch.compile(flex.flex_attention, backend="aot_eager", fullgraph=True)
    cases = flex_cases(flex)
    gen = torch.Generator().manual_seed(0)
    with torch._dynamo.config.patch(error_on_recompile=False):
        for case in ("document", "left padding"):
            mask_mod, mask, num_queries, num_keys = cases[case]
            q = torch.randn(2, 2, num_queries, 8, generator=gen)
            k, v = (torch.randn(2, 2, num_keys, 8, generator=gen) for _ in range(2))
            block_mask = flex.create_block_mask(mask_mod, 2, None, num_queries, num_keys, device="cpu")
            torch.testing.assert_close(step(q, k, v, block_mask=block_mask), sdpa_with(q, k, v, mask))
        block_mask = flex.create_block_mask(al.causal_mask_mod(), None, None, 13, 13, device="cpu")
        q, k, v = (torch.randn(2, 4, 13, 8, generator=gen) for _ in range(3))
        bias = al.alibi_bias(4, 13).masked_fill(al.causal_mask(13), float("-inf"))
        ours = step(q, k, v, score_mod=al.alibi_score_mod(4), block_mask=block_mask)
        torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


@pytest.mark.gpu
@pytest.mark.compiles
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
# Importing inductor warns about torch.jit in some torch versions (nothing this test calls)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:TensorFloat32:UserWarning")
@pytest.mark.parametrize("case", ["sliding window", "document", "left padding", "alibi"])
def test_compiled_flex_attention_on_cuda_equals_sdpa_with_the_library_masks(flex: ModuleType, case: str) -> None:
    """The fused kernel (inductor's Triton template), skipping the blocks its block mask marks empty, over several
    128-token blocks, against SDPA with the library's masks; padding queries, whose every key is masked, get zeros
    (the kernel's check for such rows, on unless ROWS_GUARANTEED_SAFE)."""
    torch._dynamo.reset()
    cuda = torch.device("cuda")
    n, window = 300, 100
    gen = torch.Generator(device=cuda).manual_seed(0)
    q, k, v = (torch.randn(2, 4, n, 64, generator=gen, device=cuda) for _ in range(3))
    score_mod = None
    if case == "sliding window":
        mask_mod, mask = al.sliding_window_mask_mod(window), al.sliding_window_mask(n, window, device=cuda)
    elif case == "document":
        ids = torch.stack([al.document_ids_from_lengths([100, 150, 50]), al.document_ids_from_lengths([7, 293])])
        mask_mod, mask = al.document_mask_mod(ids.to(cuda)), al.document_mask(ids.to(cuda))
    elif case == "left padding":
        lens = torch.tensor([300, 170], device=cuda)
        mask_mod = flex.and_masks(al.causal_mask_mod(), al.left_padding_mask_mod(lens, n))
        mask = al.left_padded_causal_mask(lens, n)
    else:
        mask_mod, mask = al.causal_mask_mod(), al.causal_mask(n, device=cuda)
        score_mod = al.alibi_score_mod(4, device=cuda)
    block_mask = flex.create_block_mask(mask_mod, 2, None, n, n, device=cuda)
    ours = torch.compile(flex.flex_attention)(q, k, v, score_mod=score_mod, block_mask=block_mask)
    if case == "alibi":
        bias = al.alibi_bias(4, n, device=cuda).masked_fill(mask, float("-inf"))
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    else:
        expected = sdpa_with(q, k, v, mask)
    torch.testing.assert_close(ours, expected, atol=2e-3, rtol=2e-3)


# --- devices -----------------------------------------------------------------------------------------------


def test_everything_is_built_where_its_input_or_device_says_not_on_the_default_device() -> None:
    """Inside ``with torch.device("meta")`` new tensors go to meta unless told otherwise: each mask, id, bias and
    slope must still be built where its input is, or on the device it is given (here the CPU); a tensor built on
    the default device would be a meta tensor, or a CPU and a meta tensor would meet in one operation."""
    lens = torch.tensor([2, 3])
    ids = torch.tensor([0, 0, 1])
    b, h, q, kv = indices(2, 3, 2, 3)
    scores = torch.zeros(2, 3, 2, 3)
    with torch.device("meta"):
        built = {
            "sliding_window_mask": al.sliding_window_mask(2, 2, 3, device="cpu"),
            "document_mask": al.document_mask(ids),
            "document_ids_from_lengths": al.document_ids_from_lengths([1, 2], device="cpu"),
            "left_padding_mask": al.left_padding_mask(lens, 3),
            "left_padding_position_ids": al.left_padding_position_ids(lens, 3),
            "left_padded_causal_mask": al.left_padded_causal_mask(lens, 2, 3),
            "alibi_slopes": al.alibi_slopes(3, device="cpu"),
            "alibi_bias": al.alibi_bias(3, 2, 3, device="cpu"),
        }
        built["alibi_score_mod"] = al.alibi_score_mod(3, q_offset=1, device="cpu")(scores, b, h, q, kv)
    assert {name: tensor.device.type for name, tensor in built.items()} == dict.fromkeys(built, "cpu")
    assert built["document_ids_from_lengths"].tolist() == [0, 1, 1]
    assert built["left_padding_position_ids"].tolist() == [[0, 0, 1], [0, 1, 2]]
    assert built["document_mask"].equal(al.document_mask(ids))
    assert built["left_padded_causal_mask"].equal(al.left_padded_causal_mask(lens, 2, 3))
    torch.testing.assert_close(built["alibi_score_mod"], al.alibi_bias(3, 2, 3).expand(2, -1, -1, -1))


# --- bad arguments -------------------------------------------------------------------------------------------


WHOLE_TENSOR = r"document_ids must be a tensor of shape \(num_tokens,\) or \(batch, num_tokens\), got \(1, 2, 3\)"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: al.sliding_window_mask(4, 0), ValueError, "window must be a positive integer, got 0"),
        (lambda: al.sliding_window_mask(4, 2.0), TypeError, "window must be a positive integer, got 2.0"),
        (lambda: al.sliding_window_mask(4, 2, 3), ValueError, r"num_keys \(3\) must be at least num_queries \(4\): .*"),
        (lambda: al.sliding_window_mask(0, 2), ValueError, "num_queries must be a positive integer, got 0"),
        (
            lambda: al.document_mask([0, 1]),
            TypeError,
            r"document_ids must be a torch.Tensor of shape \(num_tokens,\) .*",
        ),
        (lambda: al.document_mask(torch.tensor([0.0, 1.0])), TypeError, r"document_ids must hold integers .*"),
        (lambda: al.document_mask(torch.tensor([True])), TypeError, r"document_ids must hold integers .*"),
        (lambda: al.document_mask(torch.zeros(1, 2, 3, dtype=torch.long)), ValueError, WHOLE_TENSOR),
        (
            lambda: al.document_mask(torch.zeros(0, dtype=torch.long)),
            ValueError,
            r"num_tokens \(document_ids.shape\[-1\]\) must be a positive integer, got 0",
        ),
        (lambda: al.document_ids_from_lengths([2, 0]), ValueError, r"lengths\[1\] must be a positive integer, got 0"),
        (lambda: al.document_ids_from_lengths([]), ValueError, r"lengths must name at least one document, got \[\]"),
        (lambda: al.document_ids_from_lengths(5), TypeError, r"lengths must be a sequence .* \(a list\), got int"),
        (
            lambda: al.document_ids_from_lengths(torch.tensor([2])),
            TypeError,
            "lengths must be a sequence .*, got Tensor",
        ),
        (lambda: al.left_padding_mask([1], 4), TypeError, r"valid_lens must be a torch.Tensor of shape \(batch,\), .*"),
        (lambda: al.left_padding_mask(torch.tensor([[1]]), 4), ValueError, r"valid_lens .* shape \(batch,\), one .*"),
        (lambda: al.left_padding_mask(torch.tensor([5]), 4), ValueError, r"valid_lens must lie in \[0, 4\] .*"),
        (lambda: al.left_padding_mask(torch.tensor([1.5]), 4), ValueError, r"valid_lens must hold whole numbers, .*"),
        (lambda: al.left_padding_mask(torch.tensor([True]), 4), TypeError, "valid_lens must hold integer lengths, .*"),
        (lambda: al.left_padding_position_ids(torch.tensor([1]), 0), ValueError, "num_tokens must be a positive .*"),
        (
            lambda: al.left_padded_causal_mask(torch.tensor([1]), 3, 2),
            ValueError,
            r"num_keys \(2\) must be at least .*",
        ),
        (lambda: al.left_padded_causal_mask(torch.tensor([1]), 0), ValueError, "num_queries must be a positive .*"),
        (lambda: al.causal_mask_mod(-1), ValueError, "q_offset must be a non-negative integer, got -1"),
        (lambda: al.causal_mask_mod(True), TypeError, "q_offset must be a non-negative integer, got True"),
        (lambda: al.sliding_window_mask_mod(0), ValueError, "window must be a positive integer, got 0"),
        (lambda: al.sliding_window_mask_mod(2, -1), ValueError, "q_offset must be a non-negative integer, got -1"),
        (lambda: al.document_mask_mod(torch.tensor([0.5])), TypeError, "document_ids must hold integers .*"),
        (lambda: al.document_mask_mod(torch.zeros(1, 2, 3, dtype=torch.long)), ValueError, WHOLE_TENSOR),
        (lambda: al.left_padding_mask_mod(torch.tensor([3]), 2), ValueError, r"valid_lens must lie in \[0, 2\] .*"),
        (lambda: al.alibi_slopes(0), ValueError, "num_heads must be a positive integer, got 0"),
        (lambda: al.alibi_bias(2, 0), ValueError, "num_queries must be a positive integer, got 0"),
        (lambda: al.alibi_bias(2, 3, 2), ValueError, r"num_keys \(2\) must be at least num_queries \(3\): .*"),
        (lambda: al.alibi_score_mod(2, q_offset=-1), ValueError, "q_offset must be a non-negative integer, got -1"),
    ],
)
def test_bad_arguments_are_refused_by_name(call: Callable[[], object], error: type[Exception], message: str) -> None:
    """The whole message (fullmatch): it names the argument first and says what was expected."""
    with pytest.raises(error) as raised:
        call()
    assert re.fullmatch(message, str(raised.value)), str(raised.value)


def test_the_ring_buffer_refuses_keys_that_do_not_fit() -> None:
    cache = al.SlidingWindowKVCache(1, 2, 4, 3)
    with pytest.raises(ValueError, match=r"keys must have shape \(batch=1, num_kv_heads=2, num_tokens, head_dim=3\)"):
        cache.update(torch.zeros(1, 1, 2, 3), torch.zeros(1, 1, 2, 3))
    with pytest.raises(TypeError, match=r"values must have the cache's dtype, torch\.float32, got torch\.float64"):
        cache.update(torch.zeros(1, 2, 2, 3), torch.zeros(1, 2, 2, 3, dtype=torch.float64))
    assert cache.num_seen == 0  # refused before anything was written
