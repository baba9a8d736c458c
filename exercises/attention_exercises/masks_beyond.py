"""The exercises of the masks-beyond-causal chapter: a sliding window inside
each packed document, written as a mask, and a FlexAttention mask_mod for a
left-padded batch with a sliding window, which returns True where masked."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from attention_lib.masks_beyond import (
    document_mask,
    left_padding_mask,
    sliding_window_mask,
)

from ._core import (
    Exercise,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("masks_beyond")

Make = Callable[[], torch.Tensor]


def _back(num_tokens: int) -> torch.Tensor:
    """How many positions back each key is from each query, ``(n, n)``."""
    positions = torch.arange(num_tokens)
    # (n, 1) - (n,) -> (n, n)
    return positions[:, None] - positions


def _document_ids(seed: int, gen: torch.Generator) -> torch.Tensor:
    """Runs of equal ids: one row for some seeds, a batch of rows for the
    others (each row packed its own way)."""
    num_tokens = 4 + seed % 5
    rows = 1 if seed % 3 == 0 else 2 + seed % 2
    found = []
    for _ in range(rows):
        # Where a new document starts: never at 0, sometimes nowhere.
        starts = torch.rand(num_tokens, generator=gen) < 0.35
        # The first inputs hold one long document, so that a window that is
        # missing, or off by one, shows there first.
        starts[0] = False
        starts &= seed % 5 != 0
        found.append(starts.long().cumsum(0))
    ids = torch.stack(found)  # (rows, num_tokens)
    return ids[0] if seed % 3 == 0 else ids


def _sliding_document(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        ids = _document_ids(seed, gen)
        n = ids.shape[-1]
        window = 1 + (seed + 1) % 4  # 2 first: 1 hides all but the query
        back = _back(n)
        outside = (back < 0) | (back >= window)
        # (..., n, 1) != (..., 1, n) -> (..., n, n)
        other = ids[..., :, None] != ids[..., None, :]
        expected = other | outside
        # The batch forgotten: ids[:, None] against ids[None, :], in either
        # order of the two masks.
        flat = functools.partial(torch.ne, ids[:, None], ids[None, :])
        ways: dict[str, list[Make]] = {
            "batch_dims": [
                lambda: flat() | outside,
                lambda: outside | flat(),
            ],
        }
        out = call(answer, ids.clone(), window, wrong=variants(ways))
        if isinstance(out, torch.Tensor) and out.dtype != torch.bool:
            raise WrongAnswerError(
                "dtype",
                "bool_mask",
                what="mask",
                got=str(out.dtype).removeprefix("torch."),
                expected="bool",
            )

        def rule(lo: int, hi: int) -> torch.Tensor:
            """Visible: ``lo <= back < hi``, in the same document."""
            return other | (back < lo) | (back >= hi)

        ways |= {
            "mask_polarity": [lambda: ~expected],
            "causal_diagonal": [
                lambda: rule(1, window),  # itself hidden
                lambda: rule(-1, window),  # the next key seen
            ],
            "window_count": [
                lambda: rule(0, window + 1),
                lambda: rule(0, window - 1),
            ],
            "window_missing": [lambda: document_mask(ids)],
            "documents_missing": [lambda: outside.expand_as(expected)],
            "combine_or": [lambda: other & outside],
        }
        expect(out, expected, "mask", variants(ways))

    each_seed(once)
    shape = {
        "what": "mask",
        "shape": "(num_tokens, num_tokens), (batch, num_tokens, num_tokens)",
    }
    return [
        ("shape", shape),
        ("values", values_on("lib_sliding_document")),
        ("windows", {}),
    ]


def _materialized(
    mask_mod: Callable[..., Any], batch: int, num_tokens: int
) -> torch.Tensor:
    """What ``create_mask`` makes of a mask_mod, ``(batch, n, n)``: the
    function vmapped over the sequences, the queries and the keys, as
    FlexAttention evaluates it (one head, index 0)."""
    fn = torch.vmap(mask_mod, in_dims=(None, None, None, 0))
    fn = torch.vmap(fn, in_dims=(None, None, 0, None))
    fn = torch.vmap(fn, in_dims=(0, None, None, None))
    indices = torch.arange(num_tokens)
    out = fn(torch.arange(batch), torch.tensor(0), indices, indices)
    if not isinstance(out, torch.Tensor):
        return out
    return out.bool() if out.dtype != torch.bool else out


def _no_window(made: Callable[..., Any]) -> bool:
    """Whether the reader's mask lets four real tokens, with a window of 1,
    see every earlier key: no window at all."""
    try:
        probe = call(made, torch.tensor([4]), 4, 1)
    except WrongAnswerError:
        return False
    causal = torch.ones(1, 4, 4, dtype=torch.bool).tril()
    return isinstance(probe, torch.Tensor) and torch.equal(probe, causal)


def _padded_window(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        batch, n = 1 + seed % 3, 3 + seed % 5
        window = 1 + seed % 4
        lens = torch.randint(1, n + 1, (batch,), generator=gen)
        lens[0] = min(int(lens[0]), n - 1)  # at least one padded sequence
        num_pads = n - lens  # (batch,)
        back = _back(n)

        def made(valid_lens: torch.Tensor, num_keys: int, window: int) -> Any:
            mask_mod = answer(valid_lens, num_keys, window)
            return _materialized(mask_mod, len(valid_lens), num_keys)

        def evaluated(mask_mod: Callable[..., Any]) -> Make:
            return lambda: _materialized(mask_mod, batch, n)

        def ambiguous(
            b: torch.Tensor,
            h: torch.Tensor,
            q_idx: torch.Tensor,
            kv_idx: torch.Tensor,
        ) -> torch.Tensor:
            # Python's `and` on tensors: the error the reader's gets.
            return (kv_idx >= num_pads[b]) and (q_idx >= kv_idx)

        made.__name__ = getattr(answer, "__name__", "answer")
        out = call(
            made,
            lens.clone(),
            n,
            window,
            wrong=variants({"tensor_ops": [evaluated(ambiguous)]}),
        )
        # (n,) < (batch, 1, 1) -> (batch, 1, n); | (n, n) -> (batch, n, n)
        padding = left_padding_mask(lens, n)
        expected = ~(padding | sliding_window_mask(n, window))

        def allowed(lo: int, hi: int, pads: torch.Tensor) -> torch.Tensor:
            """Allowed: ``lo <= back < hi``, and no key in ``pads``."""
            return ~pads & (back >= lo) & (back < hi)

        key = torch.arange(n)
        # Right padding: the first valid_lens keys taken for the real ones;
        # and the first real key counted as padding.
        right_pads = (key >= lens[:, None])[:, None]
        one_more = (key <= num_pads[:, None])[:, None]
        ways: dict[str, list[Make]] = {
            "mask_polarity": [lambda: ~expected],
            "combine_and": [
                lambda: ~padding | (back >= 0) | (back < window),
            ],
            "causal_diagonal": [
                lambda: allowed(1, window, padding),
                lambda: allowed(-1, window, padding),
            ],
            "window_count": [
                lambda: allowed(0, window + 1, padding),
                lambda: allowed(0, window - 1, padding),
            ],
            "future": [lambda: ~padding & (back < window)],
            "left_pads": [
                lambda: allowed(0, window, right_pads),
                lambda: allowed(0, window, one_more),
            ],
            "window_missing": [lambda: ~padding & (back >= 0)],
        }
        try:
            expect(out, expected, "allowed", variants(ways))
        except WrongAnswerError as failure:
            if failure.hint == "window_count" and _no_window(made):
                # Short sequences and a window of 1 cannot tell a window
                # one key too wide from none: four tokens can.
                failure.hint = "window_missing"
            raise

    each_seed(once)
    shape = {
        "what": "allowed",
        "shape": "(batch, num_tokens, num_tokens)",
    }
    return [
        ("shape", shape),
        ("values", values_on("lib_padded_window")),
        ("polarity", {}),
    ]


EXERCISES = [
    Exercise(
        "exercise-sliding-document-mask",
        _sliding_document,
        WORDS,
        # The task: the two rules written from the ids and the positions.
        Rules(
            functions={
                "document_mask": document_mask,
                "sliding_window_mask": sliding_window_mask,
            }
        ),
        reference="lib_sliding_document",
        mistakes=frozenset({"mask_polarity", "causal_diagonal"}),
    ),
    Exercise(
        "exercise-padded-window-bug",
        _padded_window,
        WORDS,
        reference="lib_padded_window",
        mistakes=frozenset({"mask_polarity", "causal_diagonal"}),
    ),
]
