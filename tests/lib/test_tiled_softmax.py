"""Softmax in tiles: attention over blocks of keys with a running maximum and sum (``attention_lib.tiled_softmax``).

What the online softmax promises: ``tiled_attention`` equals ``masked_softmax``-based attention for every shape,
tile size and kind of mask (fully masked rows give zeros, as ``masked_softmax`` does); ``online_softmax`` equals
``masked_softmax``; each step holds one tile of scores and no tensor as large as the whole ``(num_queries,
num_keys)`` table is ever made; after every step the running max and sum are those of the scores seen so far;
and the running max keeps every exponential at most 1, so float16 and bfloat16 scores of 1e4 give the right
weights where exp-then-normalise overflows. The bad arguments are rows of tests/lib/test_bad_input.py.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

import attention_lib as al

TOL = {"atol": 1e-12, "rtol": 1e-10}  # float64
MASKS = ["none", "random", "causal", "padding", "fully_masked_rows", "broadcast_keys", "broadcast_queries"]
seeds = st.integers(0, 2**16)


def _randn(*shape: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _mask(kind: str, lead: tuple[int, ...], num_queries: int, num_keys: int, seed: int) -> torch.Tensor | None:
    """A boolean mask of ``kind``, True = masked out, that broadcasts to ``(*lead, num_queries, num_keys)``."""
    gen = torch.Generator().manual_seed(seed)
    full = (*lead, num_queries, num_keys)
    if kind == "none":
        return None
    if kind == "random":
        return torch.rand(full, generator=gen) < 0.5
    if kind == "causal":
        return al.causal_mask(num_queries, num_keys, align="lower_right")  # (q, n): broadcast over lead
    if kind == "padding":
        batch = lead[0] if lead else 1
        valid_lens = torch.randint(1, num_keys + 1, (batch,), generator=gen)
        mask = al.padding_mask(valid_lens, num_keys)  # (batch, 1, n)
        # one dimension per head dimension after the batch: (batch, 1, ..., 1, n)
        return mask.view(batch, *([1] * max(len(lead) - 1, 0)), 1, num_keys) if lead else mask[0]
    if kind == "fully_masked_rows":
        mask = torch.rand(full, generator=gen) < 0.3
        rows = torch.rand((*lead, num_queries, 1), generator=gen) < 0.5
        rows.view(-1)[0] = True  # at least one query that sees no key
        return mask | rows
    if kind == "broadcast_keys":  # one row of keys for every query: (n,)
        return torch.rand(num_keys, generator=gen) < 0.4
    if kind == "broadcast_queries":  # per query, the same for every key: (q, 1), some rows all masked
        return torch.rand(num_queries, 1, generator=gen) < 0.4
    raise ValueError(kind)


def _reference(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    return al.masked_softmax(al.scaled_dot_product_scores(queries, keys), mask) @ values


shapes = st.fixed_dictionaries(
    {
        "lead": st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
        "num_queries": st.integers(1, 6),
        "num_keys": st.integers(1, 12),
        "head_dim": st.integers(1, 6),
        "value_size": st.integers(1, 5),
    }
)


# --- equal to attention with the whole softmax -----------------------------------------------------------------


@given(
    shape=shapes, tile_extra=st.integers(0, 3), tile_fraction=st.floats(0, 1), mask=st.sampled_from(MASKS), seed=seeds
)
def test_tiled_attention_equals_masked_softmax_attention(
    shape: dict, tile_extra: int, tile_fraction: float, mask: str, seed: int
) -> None:
    """Every tile size from 1 to beyond num_keys, every kind of mask, any leading dimensions."""
    lead, n = shape["lead"], shape["num_keys"]
    tile_size = 1 + round(tile_fraction * (n - 1)) + tile_extra  # 1 .. n + 3
    queries = _randn(*lead, shape["num_queries"], shape["head_dim"], seed=seed)
    keys = _randn(*lead, n, shape["head_dim"], seed=seed + 1)
    values = _randn(*lead, n, shape["value_size"], seed=seed + 2)
    made = _mask(mask, lead, shape["num_queries"], n, seed)
    out = al.tiled_attention(queries, keys, values, made, tile_size=tile_size)
    expected = _reference(queries, keys, values, made)
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype
    torch.testing.assert_close(out, expected, **TOL)


@pytest.mark.parametrize("tile_size", range(1, 11))
def test_every_tile_size_gives_the_same_output(tile_size: int) -> None:
    """One fixed input, causal, with tile sizes 1 (one key a step) to 10 (beyond its 8 keys: one step)."""
    queries, keys, values = _randn(2, 5, 4, seed=1), _randn(2, 8, 4, seed=2), _randn(2, 8, 3, seed=3)
    mask = al.causal_mask(5, 8, align="lower_right")
    torch.testing.assert_close(
        al.tiled_attention(queries, keys, values, mask, tile_size), _reference(queries, keys, values, mask), **TOL
    )
    assert len(list(al.tile_steps(queries, keys, values, mask, tile_size))) == math.ceil(8 / tile_size)


def test_a_query_that_sees_no_key_gets_zeros_not_nan() -> None:
    queries, keys, values = _randn(3, 4, seed=1), _randn(6, 4, seed=2), _randn(6, 2, seed=3)
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[1] = True
    out = al.tiled_attention(queries, keys, values, mask, tile_size=4)
    assert torch.equal(out[1], torch.zeros(2, dtype=torch.float64))
    assert torch.isfinite(out).all()
    # Its last step: no max (still -inf), sum 0, output 0.
    *_, last = al.tile_steps(queries, keys, values, mask, tile_size=4)
    assert last.running_max[1].item() == float("-inf")
    assert last.running_sum[1].item() == 0.0


@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
    num_keys=st.integers(1, 12),
    tile_size=st.integers(1, 15),
    masked=st.floats(0, 1),
    seed=seeds,
)
def test_online_softmax_equals_masked_softmax(
    lead: tuple[int, ...], num_keys: int, tile_size: int, masked: float, seed: int
) -> None:
    """-inf marks a masked score; a row of only -inf gives zeros, as masked_softmax gives it."""
    scores = _randn(*lead, 4, num_keys, seed=seed) * 10
    mask = torch.rand(scores.shape, generator=torch.Generator().manual_seed(seed)) < masked
    out = al.online_softmax(scores.masked_fill(mask, float("-inf")), tile_size)
    torch.testing.assert_close(out, al.masked_softmax(scores, mask), **TOL)


# --- what each step holds --------------------------------------------------------------------------------------


@given(shape=shapes, tile_size=st.integers(1, 14), mask=st.sampled_from(MASKS), seed=seeds)
@settings(max_examples=60)
def test_each_step_holds_one_tile_and_the_running_max_and_sum_of_the_keys_so_far(
    shape: dict, tile_size: int, mask: str, seed: int
) -> None:
    """The steps cover the keys in order, one tile each, scores (..., num_queries, <= tile_size); after each
    step the running max is the largest score so far, the running sum Σ exp(score - running max) over the
    scores so far, the output Σ exp(score - running max) · value, and rescale exp(previous max - new max)."""
    lead, q, n = shape["lead"], shape["num_queries"], shape["num_keys"]
    queries = _randn(*lead, q, shape["head_dim"], seed=seed)
    keys = _randn(*lead, n, shape["head_dim"], seed=seed + 1)
    values = _randn(*lead, n, shape["value_size"], seed=seed + 2)
    made = _mask(mask, lead, q, n, seed)
    full = al.scaled_dot_product_scores(queries, keys)
    if made is not None:
        full = full.masked_fill(made, float("-inf"))
    steps = list(al.tile_steps(queries, keys, values, made, tile_size))
    assert [(s.start, s.stop) for s in steps] == [(a, min(a + tile_size, n)) for a in range(0, n, tile_size)]
    previous = torch.full((*lead, q, 1), float("-inf"), dtype=torch.float64)
    for step in steps:
        assert step.scores.shape == (*lead, q, step.stop - step.start)
        assert step.scores.shape[-1] <= tile_size
        torch.testing.assert_close(step.scores, full[..., step.start : step.stop], **TOL)
        seen = full[..., : step.stop]
        running_max = seen.amax(dim=-1, keepdim=True)
        torch.testing.assert_close(step.running_max, running_max, **TOL)
        # A row that has seen no key yet: nothing to subtract, sum 0.
        finite = running_max.masked_fill(running_max == float("-inf"), 0.0)
        exps = torch.exp(seen - finite)
        torch.testing.assert_close(step.running_sum, exps.sum(dim=-1, keepdim=True), **TOL)
        torch.testing.assert_close(step.output, exps @ values[..., : step.stop, :], **TOL)
        torch.testing.assert_close(step.rescale, torch.exp(previous - finite), **TOL)
        assert (step.rescale <= 1).all()
        previous = step.running_max
    # After the last step: the whole row's max and sum of exponentials.
    last = steps[-1]
    torch.testing.assert_close(last.running_max, full.amax(dim=-1, keepdim=True), **TOL)


def test_a_step_that_raises_the_max_rescales_what_came_before() -> None:
    """Scores 1, 2 | 5: the second tile raises the max from 2 to 5, so the sum e^(1-2) + e^0 is multiplied by
    e^(2-5) before the new tile's e^0 is added."""
    queries = torch.tensor([[1.0]], dtype=torch.float64)  # head_dim 1: the scores are the keys
    keys = torch.tensor([[1.0], [2.0], [5.0]], dtype=torch.float64)
    values = torch.tensor([[1.0], [0.0], [0.0]], dtype=torch.float64)
    first, second = al.tile_steps(queries, keys, values, tile_size=2)
    assert first.running_max.item() == 2.0
    assert first.rescale.item() == 0.0
    assert second.running_max.item() == 5.0
    assert second.rescale.item() == pytest.approx(math.exp(-3))
    assert second.running_sum.item() == pytest.approx((math.exp(-1) + 1) * math.exp(-3) + 1)
    assert second.output.item() == pytest.approx(math.exp(-1) * math.exp(-3))


class _Largest(TorchDispatchMode):
    """The largest memory any operation allocates while it is active, in elements: a view (a slice, the mask
    expanded to the scores' shape) and the inputs' own memory are not new."""

    def __init__(self, *inputs: torch.Tensor) -> None:
        super().__init__()
        self.numel = 0
        self.given = {tensor.untyped_storage().data_ptr() for tensor in inputs}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(tensor, torch.Tensor) and tensor.untyped_storage().data_ptr() not in self.given:
                self.numel = max(self.numel, tensor.untyped_storage().nbytes() // tensor.element_size())
        return out


@pytest.mark.parametrize(("num_tokens", "tile_size"), [(256, 16), (512, 32), (300, 64)])
def test_no_tensor_as_large_as_the_scores_table_is_ever_made(num_tokens: int, tile_size: int) -> None:
    """The page's memory claim: the largest tensor the tiled loop makes is one tile of scores, num_queries ×
    tile_size, where the softmax of the whole row makes num_queries × num_tokens."""
    head_dim = 8
    queries, keys, values = (_randn(num_tokens, head_dim, seed=s, dtype=torch.float32) for s in range(3))
    mask = al.causal_mask(num_tokens)
    with _Largest(queries, keys, values, mask) as tiled:
        al.tiled_attention(queries, keys, values, mask, tile_size)
    with _Largest(queries, keys, values, mask) as whole:
        _reference(queries, keys, values, mask)
    assert tiled.numel == num_tokens * tile_size
    assert whole.numel == num_tokens * num_tokens
    largest_step = max(s.scores.numel() for s in al.tile_steps(queries, keys, values, mask, tile_size))
    assert largest_step == num_tokens * tile_size


# --- low precision ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_scores_of_1e4_do_not_overflow(dtype: torch.dtype) -> None:
    """Scores near 1e4: exp overflows to inf in float16 and bfloat16 alike (exp(89) already in float32), and
    exp-then-normalise gives nan; the running max keeps every exponential at most 1, so the tiled output is
    finite and matches float32 attention on the same inputs."""
    queries = torch.tensor([[100.0], [-100.0]], dtype=dtype)  # head_dim 1: no scaling
    keys = torch.tensor([[100.0], [99.0], [98.0], [60.0], [100.0]], dtype=dtype)
    values = torch.arange(10.0).view(5, 2).to(dtype)
    scores = al.scaled_dot_product_scores(queries, keys)
    assert scores.abs().max().item() > 9900  # 1e4, rounded to the dtype
    naive = al.naive_softmax(scores) @ values
    assert not torch.isfinite(naive).all()
    out = al.tiled_attention(queries, keys, values, tile_size=2)
    assert out.dtype == dtype
    assert torch.isfinite(out).all()
    expected = _reference(queries.float(), keys.float(), values.float(), None)
    torch.testing.assert_close(out.float(), expected, atol=0.05, rtol=0.01)
    for step in al.tile_steps(queries, keys, values, tile_size=2):
        assert (step.rescale <= 1).all()
        # exp(score - running max) <= 1 for each key so far, and the max's own is 1
        assert (step.running_sum >= 1).all()
        assert (step.running_sum <= step.stop).all()


def test_float32_overflows_too_without_the_max() -> None:
    scores = torch.tensor([[89.0, 1.0]])
    assert torch.isnan(al.naive_softmax(scores)).any()
    torch.testing.assert_close(al.online_softmax(scores, tile_size=1), torch.softmax(scores, dim=-1))


# --- devices ---------------------------------------------------------------------------------------------------


def test_tiled_attention_on_device(device: torch.device) -> None:
    queries, keys, values = (_randn(2, 3, 7, 8, seed=s, dtype=torch.float32).to(device) for s in range(3))
    mask = al.causal_mask(7, device=device)
    out = al.tiled_attention(queries, keys, values, mask, tile_size=3)
    assert out.device.type == device.type
    torch.testing.assert_close(out, _reference(queries, keys, values, mask), atol=1e-5, rtol=1e-5)
    if device.type == "cuda":
        half = al.tiled_attention(queries.half() * 100, keys.half() * 100, values.half(), mask, tile_size=3)
        assert torch.isfinite(half).all()
