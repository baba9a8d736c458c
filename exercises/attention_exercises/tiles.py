"""The exercises of the softmax-in-tiles chapter: attention over tiles of
keys with a running maximum and sum, written for a few queries, holding one
tile of scores at a time; and a masked version whose output misses the
correction that a raised maximum needs."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import torch
from attention_lib.masks import masked_softmax
from attention_lib.tiled_softmax import (
    online_softmax,
    tile_steps,
    tiled_attention,
)
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ._core import (
    COUNT,
    Exercise,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    fill_zero_ways,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("tiles")

Make = Callable[[], torch.Tensor]

#: Scores this far apart overflow a float32 exp taken without the maximum
#: (exp(89) is inf): the inputs of the last seeds reach them.
LARGE = 100.0

#: A row whose scores are all below -FAR: exp(-FAR) is 0 in float32, so
#: such a row needs its own maximum from the start.
FAR = 110.0


def _factor(
    kind: str,
    running_max: torch.Tensor,
    new_max: torch.Tensor,
    tile_max: torch.Tensor,
) -> torch.Tensor:
    """The factor that brings what came before to ``new_max``'s scale,
    right (``"right"``), or as `_loop`'s mistakes take it."""
    if kind == "inverted":
        return torch.exp(new_max - running_max)
    if kind == "inverted_finite":
        return torch.exp(new_max - running_max).nan_to_num(posinf=0.0)
    if kind == "ratio":
        return torch.exp(running_max) / torch.exp(new_max)
    if kind == "tile":
        seen = tile_max.masked_fill(tile_max == float("-inf"), 0.0)
        return torch.exp(running_max - seen)
    return torch.exp(running_max - new_max)


def _loop(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    tile_size: int,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    rescale_sum: bool = True,
    rescale_output: bool = True,
    factor: str = "right",
    output_factor: str | None = None,
    exps_against: str = "new",
    max_kind: str = "running",
    tiles: str = "right",
    guard: bool = True,
    divide: str = "end",
    divide_guard: bool = True,
    fill: float = float("-inf"),
    scale_by_tile: bool = False,
    start_max: float = float("-inf"),
) -> torch.Tensor:
    """The tiled loop over ``(num_queries, head_dim)`` queries, right, or
    with one of the typical mistakes: a sum or an output left on the old
    maximum's scale; a factor ``exp(new - old)`` (``factor="inverted"``,
    or ``"inverted_finite"`` with its ``inf`` made 0), ``exp(old) /
    exp(new)`` (``"ratio"``) or ``exp(old - tile_max)`` (``"tile"``);
    exponentials against the old maximum (``exps_against="old"``); the
    first tile's maximum kept (``max_kind="first"``) or each tile's own
    (``"tile"``); the last, shorter tile dropped (``tiles="full"``) or
    tiles one key too long (``"overlap"``); no care for a row whose keys so
    far are all masked (``guard=False``: ``-inf - -inf``) or that sees no
    key (``divide_guard=False``: ``0 / 0``); no division (``divide="none"``)
    or one at each tile (``"inside"``); masked scores filled with a finite
    ``fill``; each tile's scores scaled by the square root of its length
    (``scale_by_tile``); a running max that starts at ``start_max`` rather
    than ``-inf``, or that is one for every query
    (``max_kind="all_queries"``)."""
    if scale is None:
        scale = math.sqrt(queries.shape[-1])
    num_queries, num_keys = queries.shape[0], keys.shape[0]
    running_max = queries.new_full((num_queries, 1), start_max)
    running_sum = queries.new_zeros((num_queries, 1))
    output = queries.new_zeros((num_queries, values.shape[-1]))
    last = num_keys - tile_size + 1 if tiles == "full" else num_keys
    for start in range(0, last, tile_size):
        stop = min(start + tile_size + (tiles == "overlap"), num_keys)
        scores = queries @ keys[start:stop].T
        scores = scores / (math.sqrt(stop - start) if scale_by_tile else scale)
        if mask is not None:
            scores = scores.masked_fill(mask[:, start:stop], fill)
        tile_max = scores.amax(dim=-1, keepdim=True)
        if max_kind == "tile":
            new_max = tile_max
        elif max_kind == "all_queries":  # amax without keepdim, then again
            new_max = torch.maximum(running_max, tile_max.amax())
        elif max_kind == "first" and start > 0:
            new_max = running_max
        else:
            new_max = torch.maximum(running_max, tile_max)
        safe = (
            new_max.masked_fill(new_max == float("-inf"), 0.0)
            if guard
            else new_max
        )
        old = running_max.masked_fill(running_max == float("-inf"), 0.0)
        against = {"new": safe, "old": running_max if guard else old}
        exps = torch.exp(scores - against[exps_against])
        sum_factor = (
            _factor(factor, running_max, safe, tile_max)
            if rescale_sum
            else 1.0
        )
        output_factor_now = (
            _factor(output_factor or factor, running_max, safe, tile_max)
            if rescale_output
            else 1.0
        )
        running_sum = running_sum * sum_factor + exps.sum(-1, keepdim=True)
        tile_output = exps @ values[start:stop]
        if divide == "inside":
            tile_output = tile_output / running_sum.masked_fill(
                running_sum == 0, 1.0
            )
        output = output * output_factor_now + tile_output
        running_max = new_max
    if divide != "end":
        return output
    if not divide_guard:
        return output / running_sum
    return output / running_sum.masked_fill(running_sum == 0, 1.0)


def _per_tile(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    tile_size: int,
    mean: bool,
) -> torch.Tensor:
    """A softmax of each tile on its own, the tiles' outputs added (or
    averaged) with no common maximum or sum to put them on one scale."""
    scores = queries @ keys.T / math.sqrt(queries.shape[-1])
    outs = [
        torch.softmax(scores[:, start : start + tile_size], dim=-1)
        @ values[start : start + tile_size]
        for start in range(0, keys.shape[0], tile_size)
    ]
    total = torch.stack(outs).sum(dim=0)
    return total / len(outs) if mean else total


def _loop_ways(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    tile_size: int,
    mask: torch.Tensor | None = None,
) -> dict[str, list[Make]]:
    """The mistakes of the loop itself, the same in both exercises, in the
    order their hints are tried: the most precise first."""

    def loop(**how: Any) -> Make:
        return lambda: _loop(q, k, v, tile_size, mask, **how)

    return {
        "no_rescale": [loop(rescale_sum=False, rescale_output=False)],
        "rescale_sum_only": [loop(rescale_output=False)],
        "rescale_output_only": [loop(rescale_sum=False)],
        "no_divide": [loop(divide="none")],
        "divide_inside": [loop(divide="inside")],
        "partial_tile": [loop(tiles="full")],
        "overlap": [loop(tiles="overlap")],
        # Only the rows that see no key are nan: 0 / 0 at the end.
        "empty_rows_nan": [loop(divide_guard=False)],
        "masked_nan": [loop(guard=False)],
        # The far row's 0 / 0, divided as it is or by 1.
        "max_start_zero": [
            loop(start_max=0.0, divide_guard=False),
            loop(start_max=0.0),
        ],
        "max_all_queries": [
            loop(max_kind="all_queries", divide_guard=False),
            loop(max_kind="all_queries"),
        ],
        # Each tile against its own maximum, never brought to one scale.
        "tile_max_only": [
            loop(max_kind="tile", rescale_sum=False, rescale_output=False)
        ],
        # A factor that overflows (its exp of a difference above 0), told
        # apart from an exp of the scores that overflows by where the inf
        # came from (`_Tiles.overflow`).
        "tile_max_running": [loop(max_kind="tile")],
        "factor_tile_max": [loop(factor="tile")],
        "factor_ratio": [loop(factor="ratio")],
        # Right but where a later score overflows: before the nan of
        # rescale_sign, which a wrong sign gives everywhere from the start.
        "first_max": [loop(max_kind="first")],
        # exp(scores - old_max), inf at the first tile, as the factor
        # exp(new - old) is: the same nan everywhere.
        "exps_old_max": [loop(exps_against="old")],
        "rescale_sign": [
            loop(factor="inverted"),
            loop(factor="inverted", guard=False),
            # the first tile's inf made 0, or the first tile apart
            loop(factor="inverted_finite"),
            loop(output_factor="inverted_finite"),
        ],
    }


#: The ways whose nan comes from an exp of the scores that overflows, and
#: those whose nan comes from a factor's exp that overflows: each told by
#: where the answer's own exp overflowed (`_Tiles.overflow`), since a
#: nan from 0 / 0 or an early inf can look the same.
_SCORES_OVERFLOW = frozenset({"naive_exp", "exps_old_max"})
_FACTOR_OVERFLOW = frozenset({"factor_ratio", "tile_max_running"})


def _told_apart(
    ways: dict[str, list[Make]], tiles: _Tiles | None = None
) -> dict[str, list[Make]]:
    """``ways`` less those whose overflow the answer's did not have: an
    exp that overflowed on scores only is no factor's, and the other way
    round (where exp(new - old) overflows, the factor is turned around);
    and a nan that came from ``0 / 0`` only is no ``-inf - -inf``, nor the
    other way round."""
    if tiles is None:
        return ways
    overflow, nan_at = tiles.overflow, tiles.nan_at
    ruled_out = set()
    if nan_at == {"divide"}:
        ruled_out.add("masked_nan")
    if nan_at == {"other"}:
        ruled_out.add("empty_rows_nan")
    if "scores" not in overflow:
        ruled_out |= _SCORES_OVERFLOW
    if "row" not in overflow:
        ruled_out |= _FACTOR_OVERFLOW
    elif "scores" not in overflow:
        ruled_out |= _SCORES_OVERFLOW
    return {k: w for k, w in ways.items() if k not in ruled_out}


# torch leaves TorchDispatchMode's __init_subclass__ and __init__ untyped.
class _Tiles(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """What the answer holds while it runs, among the tensors computed from
    the keys (the keys themselves, their tiles, and all that comes of
    them): a tensor as long as all the keys in one dimension that is not a
    tensor of keys or values (``whole_row``: a whole row of scores,
    ``(num_queries, num_keys)`` or ``(num_keys,)``); the most score
    elements alive at once (``peak``: tiles kept from earlier steps, in a
    list or for a second pass); a tensor with one entry per tile
    (``per_tile``); where an ``exp`` overflowed (``overflow``: on a
    factor, one per row, or on scores); and where the first nan came from
    (``nan_at``: a division, 0 / 0, or another operation). Keys or
    values scaled as a whole (``(num_keys, head_dim)``) are not scores,
    nor is a mask made floating-point."""

    def __init__(
        self,
        keys: torch.Tensor,
        sizes: set[int],
        tile_lengths: set[int],
        num_tiles: int | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.num_keys, self.sizes = keys.shape[0], sizes
        self.lengths = tile_lengths | {self.num_keys}
        self.num_tiles = num_tiles
        self.whole_row = self.per_tile = False
        self.peak = 0
        self.overflow: set[str] = set()
        self.nan_at: set[str] = set()
        # By id, each with a reference that tells whether it is the same
        # tensor still: those computed from the keys.
        self._from_keys: dict[int, weakref.ref[torch.Tensor]] = {}
        self._scores: list[tuple[weakref.ref[torch.Tensor], int, int]] = []
        self._mark(keys)

    def _mark(self, tensor: torch.Tensor) -> None:
        self._from_keys[id(tensor)] = weakref.ref(tensor)

    def _marked(self, tensor: torch.Tensor) -> bool:
        ref = self._from_keys.get(id(tensor))
        return ref is not None and ref() is tensor

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = tree_leaves((args, kwargs or {}))
        if not any(
            isinstance(x, torch.Tensor) and self._marked(x) for x in inputs
        ):
            return out
        nan_in = any(
            isinstance(x, torch.Tensor)
            and x.is_floating_point()
            and bool(x.isnan().any())
            for x in inputs
        )
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self._watch(func, tensor, nan_in)
        return out

    def _watch(self, func: Any, tensor: torch.Tensor, nan_in: bool) -> None:
        self._mark(tensor)
        if not tensor.is_floating_point():
            return
        if not nan_in and bool(tensor.isnan().any()):
            divide = func in (
                torch.ops.aten.div.Tensor,
                torch.ops.aten.div_.Tensor,
            )
            self.nan_at.add("divide" if divide else "other")
        exp = (torch.ops.aten.exp.default, torch.ops.aten.exp_.default)
        if func in exp and bool((tensor == float("inf")).any()):
            one = tensor.dim() == 0 or tensor.shape[-1] == 1
            self.overflow.add("row" if one else "scores")
        shape = set(tensor.shape)
        if self.sizes & shape:
            return
        if self.num_keys in shape:
            self.whole_row = True
        if self.num_tiles is not None and self.num_tiles in shape:
            self.per_tile = True
        if self.lengths & shape:
            storage = tensor.untyped_storage()
            self._scores.append(
                (
                    weakref.ref(tensor),
                    storage.data_ptr(),
                    storage.nbytes() // tensor.element_size(),
                )
            )
            alive = [entry for entry in self._scores if entry[0]() is not None]
            self._scores = alive
            held = {ptr: size for _, ptr, size in alive}
            self.peak = max(self.peak, sum(held.values()))


def _sizes(seed: int) -> tuple[int, int, int, int, int]:
    """num_queries, num_keys, head_dim, value_size and tile_size: more keys
    than any other size, so that a whole row of scores shows by its length,
    a value size other than the head size and 1 (the scale of each would
    be right, or none), and tiles that do not always divide the keys."""
    num_queries = 1 + seed % 3
    head_dim = (2, 3, 4)[seed % 3]
    value_size = head_dim + 1 + seed % 2
    tile_size = 1 + (seed + 2) % 4
    num_keys = 5 + (seed * 3) % 7
    return num_queries, num_keys, head_dim, value_size, tile_size


#: The input on which the memory an answer holds is measured: sizes that
#: tell a tile of scores from everything else by its shape (a tile of 3
#: keys, the last of 2, 21 tiles, 62 keys, no other size among them).
HELD_SIZES = {"num_queries": 4, "head_dim": 5, "value_size": 7}
HELD_TILE, HELD_KEYS = 3, 62


def _held(
    answer: Any,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    expected: torch.Tensor,
    ways: dict[str, list[Make]],
    mask: torch.Tensor | None = None,
) -> None:
    """Call the answer on the memory input, and fail it if it holds more
    than one tile of scores at a time: a tensor with an entry per tile,
    more than half a row's scores alive at once, or a whole row of them."""
    num_tiles = -(-HELD_KEYS // HELD_TILE)
    tiles = _Tiles(
        k,
        {HELD_SIZES["head_dim"], HELD_SIZES["value_size"]},
        {HELD_TILE, HELD_KEYS - (num_tiles - 1) * HELD_TILE},
        num_tiles,
    )
    given = (q, k, v) if mask is None else (q, k, v, mask)
    with tiles:
        out = call(answer, *given, HELD_TILE)
    expect(out, expected, "output", variants(ways))
    if tiles.per_tile:
        raise WrongAnswerError("rule_per_tile", "per_tile")
    if tiles.whole_row:
        raise WrongAnswerError("rule_whole_row", "whole_row")
    if tiles.peak > HELD_SIZES["num_queries"] * HELD_KEYS // 2:
        raise WrongAnswerError("rule_scores_held", "scores_held")


def _held_input(
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random queries, keys and values of HELD_SIZES and HELD_KEYS."""
    q = torch.randn(
        HELD_SIZES["num_queries"], HELD_SIZES["head_dim"], generator=gen
    )
    k = torch.randn(HELD_KEYS, HELD_SIZES["head_dim"], generator=gen)
    v = torch.randn(HELD_KEYS, HELD_SIZES["value_size"], generator=gen)
    return q, k, v


def _far_rows(q: torch.Tensor, k: torch.Tensor) -> None:
    """In place, given keys whose first components are all at least 1: the
    last query's scores all below -FAR, its maximum far below 0 and far
    below the first row's (whose largest is LARGE), which a running max
    that starts at 0, or one taken over every query, turns to 0 / 0; and
    those of the queries between them just below 0, which only the max
    taken over every query turns to 0 / 0."""
    least = k[:, 0].min()
    q[1:] = 0.0
    q[1:-1, 0] = -10.0 * math.sqrt(q.shape[1]) / least
    q[-1, 0] = -FAR * math.sqrt(q.shape[1]) / least


def _tiled_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> bool:
        gen = torch.Generator().manual_seed(seed)
        num_queries, num_keys, head_dim, value_size, tile_size = _sizes(seed)
        # The last seeds' scores reach LARGE, past a float32 exp.
        large = seed >= 16
        q = torch.randn(num_queries, head_dim, generator=gen)
        k = torch.randn(num_keys, head_dim, generator=gen)
        v = torch.randn(num_keys, value_size, generator=gen)
        # Two of them with a last row far below the others: its own
        # maximum far below 0.
        far = seed in (17, 19)
        if far:
            k[:, 0] = 1 + k[:, 0].abs() / 4
        if large:  # the first query's largest score LARGE exactly
            first = q[0] @ k.T / math.sqrt(head_dim)
            sign = 1.0 if first.max() > -first.min() else -1.0
            q = q * sign * LARGE / first.abs().max()
            if far:
                _far_rows(q, k)
            # The first query's scores in ascending order: each tile raises
            # its maximum, the last by far more than a float32 exp takes.
            order = (k @ q[0]).argsort()
            if seed == 18:
                # Here the largest first, the rest ascending: the second
                # tile's maximum falls far below the first's.
                order = order.roll(1)
            k, v = k[order], v[order]
        expected = tiled_attention(q, k, v, tile_size=tile_size)
        lengths = {tile_size, num_keys % tile_size} - {0}
        tiles = _Tiles(k, {head_dim, value_size}, lengths)
        with tiles:
            out = call(answer, q.clone(), k.clone(), v.clone(), tile_size)
        expect(
            out,
            expected,
            "output",
            variants(_tiled_ways(q, k, v, tile_size, tiles)),
        )
        return tiles.whole_row

    whole_row = any(each_seed(once))
    gen = torch.Generator().manual_seed(COUNT)
    q, k, v = _held_input(gen)
    expected = tiled_attention(q, k, v, tile_size=HELD_TILE)
    _held(answer, q, k, v, expected, _tiled_ways(q, k, v, HELD_TILE))
    if whole_row:
        raise WrongAnswerError("rule_whole_row", "whole_row")
    shape = {"what": "output", "shape": "(num_queries, value_size)"}
    return [
        ("shape", shape),
        ("values", values_on("lib_tiled")),
        ("tile_sizes", {}),
        ("large", {"size": int(LARGE)}),
        ("held", {}),
    ]


def _scale_ways(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    tile_size: int,
    mask: torch.Tensor | None = None,
) -> dict[str, list[Make]]:
    """The catalogue's scaling mistakes, in the loop."""
    head_dim, value_size, num_keys = q.shape[1], v.shape[1], k.shape[0]

    def scaled(scale: float) -> Make:
        return lambda: _loop(q, k, v, tile_size, mask, scale=scale)

    return {
        "scale_missing": [scaled(1.0)],
        "scale_by_d_k": [scaled(head_dim)],
        "scale_wrong_size": [
            *(
                scaled(math.sqrt(size))
                for size in {num_keys, value_size, tile_size} - {head_dim}
            ),
            lambda: _loop(q, k, v, tile_size, mask, scale_by_tile=True),
        ],
    }


def _tiled_ways(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    tile_size: int,
    tiles: _Tiles | None = None,
) -> dict[str, list[Make]]:
    root = math.sqrt(q.shape[1])
    scores = q @ k.T

    def naive() -> torch.Tensor:
        exps = torch.exp(scores / root)
        return exps @ v / exps.sum(dim=-1, keepdim=True)

    ways: dict[str, list[Make]] = {
        **_loop_ways(q, k, v, tile_size),
        **_scale_ways(q, k, v, tile_size),
        "tile_softmax": [
            lambda: _per_tile(q, k, v, tile_size, mean=False),
            lambda: _per_tile(q, k, v, tile_size, mean=True),
        ],
        # exp of the scores as they are: inf on the large inputs.
        "naive_exp": [naive],
    }
    return _told_apart(ways, tiles)


def _mask(
    seed: int, num_queries: int, num_keys: int, gen: torch.Generator
) -> torch.Tensor:
    """True = masked out. Rows whose first tiles are all masked (padding
    at the start, as a left-padded batch has it), a row with no key at all,
    causal rows, and random ones."""
    kind = seed % 4
    if kind == 0:  # the first keys are padding, and causal after them
        pads = 1 + seed % 3
        key = torch.arange(num_keys)
        row = torch.arange(num_queries)[:, None] + num_keys - num_queries
        return (key < pads) | (key > row)
    if kind == 1:  # random, the last row sees nothing
        mask = torch.rand(num_queries, num_keys, generator=gen) < 0.5
        mask[-1] = True
        return mask
    if kind == 2:  # the first half of the keys hidden from every query
        return (torch.arange(num_keys) < num_keys // 2).expand(
            num_queries, num_keys
        )
    return torch.rand(num_queries, num_keys, generator=gen) < 0.3


def _hidden_tile(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor, tile_size: int
) -> None:
    """In place: the second tile masked out for every query, the first
    query's first tile scored below 0 with a key it sees, and a key it sees
    after the hidden tile. A factor that takes the hidden tile's maximum as
    0 shrinks the first query's sum and output by exp(its max) there."""
    k[:tile_size] *= -torch.sign(k[:tile_size] @ q[0])[:, None]
    mask[:, tile_size : 2 * tile_size] = True
    mask[0, 0] = mask[0, -1] = False


def _masked_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> bool:
        gen = torch.Generator().manual_seed(seed)
        num_queries, num_keys, head_dim, value_size, tile_size = _sizes(seed)
        # Scores far enough apart that a missed correction shows.
        q = 2 * torch.randn(num_queries, head_dim, generator=gen)
        k = 2 * torch.randn(num_keys, head_dim, generator=gen)
        v = torch.randn(num_keys, value_size, generator=gen)
        mask = _mask(seed, num_queries, num_keys, gen)
        if seed >= 16 and 2 * tile_size < num_keys:
            _hidden_tile(q, k, mask, tile_size)
        expected = tiled_attention(q, k, v, mask, tile_size)
        lengths = {tile_size, num_keys % tile_size} - {0}
        tiles = _Tiles(k, {head_dim, value_size}, lengths)
        with tiles:
            out = call(
                answer, q.clone(), k.clone(), v.clone(), mask, tile_size
            )
        ways = _masked_ways(q, k, v, mask, tile_size, expected, tiles)
        expect(out, expected, "output", variants(ways))
        return tiles.whole_row

    whole_row = any(each_seed(once))
    gen = torch.Generator().manual_seed(COUNT)
    q, k, v = _held_input(gen)
    mask = _mask(0, HELD_SIZES["num_queries"], HELD_KEYS, gen)
    expected = tiled_attention(q, k, v, mask, HELD_TILE)
    ways = _masked_ways(q, k, v, mask, HELD_TILE, expected)
    _held(answer, q, k, v, expected, ways, mask)
    if whole_row:
        raise WrongAnswerError("rule_whole_row", "whole_row")
    shape = {"what": "output", "shape": "(num_queries, value_size)"}
    return [
        ("shape", shape),
        ("values", values_on("lib_tiled_masked")),
        ("masks", {}),
        ("held", {}),
    ]


def _masked_ways(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    tile_size: int,
    expected: torch.Tensor,
    tiles: _Tiles | None = None,
) -> dict[str, list[Make]]:
    scores = q @ k.T / math.sqrt(q.shape[1])

    def whole(mask: torch.Tensor) -> Make:
        return lambda: masked_softmax(scores, mask) @ v

    def mean_where_unseen() -> torch.Tensor:
        unseen = mask.all(dim=-1, keepdim=True)
        return torch.where(unseen, v.mean(dim=0), expected)

    fill = fill_zero_ways(scores, mask)
    ways: dict[str, list[Make]] = {
        **_loop_ways(q, k, v, tile_size, mask),
        **_scale_ways(q, k, v, tile_size, mask),
        "mask_polarity": [whole(~mask)],
        "mask_fill_zero": [lambda: fill[0]() @ v, lambda: fill[1]() @ v],
        # -1e9 for the masked scores, or a uniform softmax chosen for them.
        "unseen_mean": [mean_where_unseen],
    }
    return _told_apart(ways, tiles)


#: The task of both: the loop written out, its softmax never taken whole.
TILE_RULES = Rules(
    functions={
        "tiled_attention": tiled_attention,
        "tile_steps": tile_steps,
        "online_softmax": online_softmax,
        "masked_softmax": masked_softmax,
    },
    torch_functions=frozenset(
        {
            "softmax",
            "log_softmax",
            "logsumexp",
            "scaled_dot_product_attention",
        }
    ),
)


EXERCISES = [
    Exercise(
        "exercise-tiled-attention",
        _tiled_attention,
        WORDS,
        TILE_RULES,
        reference="lib_tiled",
        mistakes=frozenset(
            {"scale_missing", "scale_by_d_k", "scale_wrong_size"}
        ),
    ),
    Exercise(
        "exercise-tile-rescale-bug",
        _masked_attention,
        WORDS,
        TILE_RULES,
        reference="lib_tiled_masked",
        mistakes=frozenset(
            {
                "scale_missing",
                "scale_by_d_k",
                "scale_wrong_size",
                "mask_polarity",
                "mask_fill_zero",
            }
        ),
    ),
]
