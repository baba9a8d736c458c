"""The numbers of the tile stepper, exported from attention_lib (``python3 dev.py figures`` writes them).

The softmax-in-tiles page shows it with ``<div data-tile-stepper="tiles"></div>``: one query attends to eight
keys, read a tile at a time by ``attention_lib.tile_steps``. For every tile size the reader can pick, with and
without a padding mask over the last keys, this writes what the loop holds after each tile, the final output
``o / l`` (``attention_lib.tiled_attention``) and the reference ``masked_softmax(scores, mask) @ values``.

The browser computes nothing here, unlike the attention explorer: the piece is about the float32 numbers of
the library's own loop (its rescale factors, and the last digits by which ``o / l`` and the softmax differ),
and all of them (8 + 4 + 2 + 1 steps, twice) take about 2 KB compressed. docs/assets/javascripts/tiles.js only
picks and formats them, and tests/site/test_tile_stepper.py compares every step it shows with ``tile_steps``.
"""

from __future__ import annotations

import json

import torch

import attention_lib as al
from docs_tools import generated
from docs_tools.project import ROOT

DATA = ROOT / "docs_tools" / "data" / "tile_stepper.json"
#: The tile sizes the reader picks from: one key per tile up to all eight in one.
TILE_SIZES = (1, 2, 4, 8)
DEFAULT_TILE_SIZE = 2
#: How many keys at the end are padding when the reader masks them.
PADDED = 2


def inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One query ``(1, 2)``, eight keys ``(8, 2)`` and their values ``(8, 2)``, with one decimal each, picked so
    that the tiles teach: key 1's score is the largest of the first half, then key 5's is larger by far, so a
    later tile raises the running maximum and rescales what came before (by about 0.26 with tiles of 2 or 4),
    while the tiles between leave it as it is (a factor of 1). No two scores are equal."""
    query = torch.tensor([[1.0, 0.5]])
    keys = torch.tensor(
        [[0.2, 0.6], [1.2, 0.4], [-0.4, 0.2], [0.8, 0.5], [0.1, -0.3], [2.6, 1.4], [0.6, 0.8], [-0.8, 0.3]]
    )
    values = torch.tensor(
        [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [-1.0, 0.5], [0.3, -0.6], [0.8, -0.4], [-0.5, -1.0], [1.0, 1.0]]
    )
    return query, keys, values


def padding(num_keys: int) -> torch.Tensor:
    """The mask of the last ``PADDED`` keys, ``(1, num_keys)``: True = masked out, as attention_lib's masks."""
    return al.padding_mask(torch.tensor([num_keys - PADDED]), num_keys)[0]


def _numbers(tensor: torch.Tensor) -> list[float | None]:
    # float32 numbers as the doubles they are exactly; -inf (a masked score) as null, which JSON can hold.
    return [None if x == float("-inf") else x for x in tensor.detach().double().flatten().tolist()]


def _number(tensor: torch.Tensor) -> float:
    (x,) = _numbers(tensor)
    if x is None:
        raise ValueError("the first key is never masked here, so no running maximum is -inf after a tile")
    return x


def run(mask: torch.Tensor | None, tile_size: int) -> dict[str, object]:
    """Every step of ``tile_steps`` for one setting, with what each tile adds (its exponentials ``exp(s - m)``,
    their sum and their sum weighted by the values), and the end: ``o / l``, the reference, and by how much the
    two differ."""
    query, keys, values = inputs()
    steps = []
    for step in al.tile_steps(query, keys, values, mask, tile_size):
        # What the loop adds for this tile, computed as tile_steps computes it (the maximum here is finite).
        exps = torch.exp(step.scores - step.running_max)  # (1, tile)
        steps.append(
            {
                "start": step.start,
                "stop": step.stop,
                "scores": _numbers(step.scores),
                "max": _number(step.running_max),
                "rescale": _number(step.rescale),
                "exps": _numbers(exps),
                "tile_sum": _number(exps.sum(dim=-1)),
                "tile_output": _numbers(exps @ values[step.start : step.stop]),
                "sum": _number(step.running_sum),
                "output": _numbers(step.output),
            }
        )
    result = al.tiled_attention(query, keys, values, mask, tile_size)
    reference = al.masked_softmax(al.scaled_dot_product_scores(query, keys), mask) @ values
    return {
        "steps": steps,
        "result": _numbers(result),
        "reference": _numbers(reference),
        "difference": (result - reference).abs().max().item(),
    }


def tiles() -> dict[str, object]:
    query, keys, values = inputs()
    masks = {"none": None, "padding": padding(keys.shape[0])}
    attn_scores = al.scaled_dot_product_scores(query, keys)  # (1, num_keys)
    return {
        "values": [_numbers(value) for value in values],
        "tile_sizes": list(TILE_SIZES),
        "padded": PADDED,
        "defaults": {"tile_size": DEFAULT_TILE_SIZE, "padding": False},
        # The whole row of scores, masked ones as null: the strip of keys the stepper walks along.
        "scores": {
            name: _numbers(attn_scores if mask is None else attn_scores.masked_fill(mask, float("-inf")))
            for name, mask in masks.items()
        },
        "runs": {name: {str(size): run(mask, size) for size in TILE_SIZES} for name, mask in masks.items()},
    }


def tile_stepper_json() -> str:
    return json.dumps({"tiles": tiles()}, indent=1) + "\n"


def outputs() -> generated.Outputs:
    return {DATA: tile_stepper_json}
