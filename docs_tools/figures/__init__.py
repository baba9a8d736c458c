"""Draw the site's figures from ``attention_lib`` and write them to ``docs/assets/figures/``.

    python3 dev.py figures           # rewrite the figures
    python3 dev.py figures --check   # exit 1 if a committed figure is out of date

The figures are plain SVG written here rather than with a plotting library: the output must be byte
for byte the same on every machine and every version, so a test can tell when a committed figure no
longer matches the library. Labels are words from the data, code and shapes, so one file serves both
languages; the pages' captions and alt texts are translated. Each figure is written twice, ``name.svg`` for
the light palette and ``name-dark.svg`` for the dark one (``dark()``), and a page shows them as
``name.svg#only-light`` and ``name-dark.svg#only-dark``, between which Material picks by the palette.

One module per family of figures: ``heatmaps`` (attention weights, cell by cell), ``shapes`` (tensors by
their shapes, heads and strides), ``masks``, ``scores`` (the query "journey" as bar charts, and the scaling),
``benchmarks`` (the attention paths' plots), ``positions`` (the angles RoPE turns by), ``tiles`` (the online
softmax's steps); ``_svg`` holds what
they share (fonts, colors, the document, the dark palette) and ``words`` the words of the figures drawn in each
language. This module lists them all and writes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from docs_tools import config, generated, interactive
from docs_tools.figures._svg import COLOR, dark, dark_color, dark_name
from docs_tools.figures.benchmarks import attention_paths_memory, attention_paths_time
from docs_tools.figures.heatmaps import (
    causal_attn_weights,
    cross_attn_weights,
    dropout_weights,
    gpt2_head_0,
    gpt2_head_1,
    journey_attn_weights,
    trained_heads_after,
    trained_heads_before,
)
from docs_tools.figures.masks import (
    attention_kinds,
    cache_alignment,
    causal_and_padding,
    mask_conventions,
    mask_cost,
    masks_beyond,
    two_ways,
)
from docs_tools.figures.positions import rope_angles
from docs_tools.figures.scores import bottleneck, query_pipeline, query_scores, sharpness, softmax_scaling
from docs_tools.figures.shapes import (
    fold_order,
    head_splitting,
    kv_head_sharing,
    memory_strides,
    projections,
    view_without_transpose,
    weight_blocks,
)
from docs_tools.figures.tiles import online_steps
from docs_tools.project import DOCS

__all__ = [
    "COLOR",
    "FIGURES",
    "FIGURE_MAKERS",
    "LOCALIZED_MAKERS",
    "all_figures",
    "causal_attn_weights",
    "dark",
    "dark_color",
    "dark_name",
    "localized_names",
    "main",
    "outputs",
    "stale_figures",
]

FIGURES = DOCS / "assets" / "figures"

#: Figures drawn in each language, as name -> maker(lang): written as ``name.<lang>.svg`` (and its dark twin).
LOCALIZED_MAKERS: dict[str, Callable[[str], str]] = {
    "memory-strides": memory_strides,
    "causal-and-padding": causal_and_padding,
    "cache-alignment": cache_alignment,
    "kv-head-sharing": kv_head_sharing,
    "query-scores": query_scores,
    "query-pipeline": query_pipeline,
    "scaled-scores": softmax_scaling,
    "view-without-transpose": view_without_transpose,
    "mask-conventions": mask_conventions,
    "bottleneck": bottleneck,
    "mask-cost": mask_cost,
    "fold-order": fold_order,
    "sharpness": sharpness,
    "two-ways": two_ways,
    "attention-kinds": attention_kinds,
    "rope-angles": rope_angles,
    "masks-beyond": masks_beyond,
    "online-steps": online_steps,
}


FIGURE_MAKERS: dict[str, Callable[[], str]] = {
    "weight-blocks.svg": weight_blocks,
    "projections.svg": projections,
    "cross-attn-weights.svg": cross_attn_weights,
    "dropout-weights.svg": dropout_weights,
    "attention-paths-time.svg": attention_paths_time,
    "attention-paths-memory.svg": attention_paths_memory,
    "trained-heads-before.svg": trained_heads_before,
    "trained-heads-after.svg": trained_heads_after,
    "journey-attn-weights.svg": journey_attn_weights,
    "causal-attn-weights.svg": causal_attn_weights,
    "head-splitting.svg": head_splitting,
    "gpt2-head-0.svg": gpt2_head_0,
    "gpt2-head-1.svg": gpt2_head_1,
}


def localized_names(lang: str) -> dict[str, Callable[[], str]]:
    """The file names of the figures drawn in ``lang``, with their makers."""
    return {f"{name}.{lang}.svg": functools.partial(make, lang) for name, make in LOCALIZED_MAKERS.items()}


def all_figures() -> dict[str, Callable[[], str]]:
    """Every light figure by file name: the shared ones, and the localized ones in every complete language."""
    localized = {name: make for lang in config.complete_locales() for name, make in localized_names(lang).items()}
    return {**FIGURE_MAKERS, **localized}


def outputs() -> dict[Path, Callable[[], str]]:
    """Each figure twice: ``name.svg`` for the light palette, ``name-dark.svg`` for the dark one."""
    # Each figure drawn once, for its light file and its dark twin.
    drawn = {name: functools.cache(make) for name, make in all_figures().items()}
    light = {FIGURES / name: make for name, make in drawn.items()}
    shaded = {FIGURES / dark_name(name): (lambda make=make: dark(make())) for name, make in drawn.items()}
    return {**light, **shaded}


def stale_figures() -> list[str]:
    """The figures whose committed file differs from what the current library draws."""
    return [path.name for path in generated.stale(outputs())]


def main(argv: list[str]) -> int:
    # The explorers' numbers (docs_tools/interactive.py) come from the same library, so they are written too.
    everything = {**outputs(), **interactive.outputs()}
    return generated.main(argv, everything, __doc__.splitlines()[0], "python3 dev.py figures")
