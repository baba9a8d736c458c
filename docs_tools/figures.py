"""Draw the site's figures from ``attention_lib`` and write them to ``docs/assets/figures/``.

    python3 dev.py figures           # rewrite the figures
    python3 dev.py figures --check   # exit 1 if a committed figure is out of date

The figures are plain SVG written here rather than with a plotting library: the output must be byte
for byte the same on every machine and every version, so a test can tell when a committed figure no
longer matches the library. Labels are words from the data, code and shapes, so one file serves both
languages; the pages' captions and alt texts are translated. Each figure is written twice, ``name.svg`` for
the light palette and ``name-dark.svg`` for the dark one (``dark()``), and a page shows them as
``name.svg#only-light`` and ``name-dark.svg#only-dark``, between which Material picks by the palette.
"""

from __future__ import annotations

import colorsys
import functools
import itertools
import math
import re
import sys
from collections.abc import Callable
from html import escape
from pathlib import Path

import torch

import attention_lib as al
from docs_tools import benchmark_tables, config, generated, interactive
from docs_tools.project import DOCS

FIGURES = DOCS / "assets" / "figures"
FONT = "font-family=\"ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', sans-serif\""
MONO = "font-family=\"ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace\""
INK = "#1f2937"
MUTED = "#6b7280"
HEAD_COLORS = ("#3f51b5", "#ef6c00")  # head 0, head 1: the same two colors in every panel
BACKGROUND = '<rect width="{width}" height="{height}" fill="#ffffff"/>'


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="title">',
            f'<title id="title">{escape(title)}</title>',
            # The light figure's own white background (the dark one has none: see dark()).
            BACKGROUND.format(width=width, height=height),
            *body,
            "</svg>",
            "",
        ]
    )


def _blend(weight: float) -> str:
    """White for 0, deep indigo for 1: the color of one attention weight."""
    low, high = (255, 255, 255), (26, 35, 126)
    rgb = (round(a + (b - a) * weight) for a, b in zip(low, high, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def heatmap(
    attn_weights: torch.Tensor,
    words: tuple[str, ...],
    title: str,
    masked: torch.Tensor | None,
    columns: tuple[str, ...] | None = None,
    cell: int = 64,
) -> str:
    """An attention-weight matrix: one row per query (``words``), one column per key (``columns``, the same
    words by default), the weight in each cell."""
    left, top = 96, 96
    columns = words if columns is None else columns
    # Colors span the largest weight shown, so that weights of 0.1 to 0.25 are still told apart.
    darkest = float(attn_weights.max())
    body = [f'<g {FONT} font-size="14" fill="{INK}">']
    for j, word in enumerate(columns):
        x = left + j * cell + cell / 2
        body.append(
            f'<text x="{x:.1f}" y="{top - 10}" text-anchor="start" transform="rotate(-40 {x:.1f} {top - 10})">'
            f"{escape(word)}</text>"
        )
    for i, word in enumerate(words):
        y = top + i * cell + cell / 2 + 5
        body.append(f'<text x="{left - 10}" y="{y:.1f}" text-anchor="end">{escape(word)}</text>')
        for j in range(len(columns)):
            x0, y0 = left + j * cell, top + i * cell
            if masked is not None and bool(masked[i, j]):
                body.append(f'<rect x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="#eceff1" stroke="#ffffff"/>')
                cx, cy = x0 + cell / 2, y0 + cell / 2 + 5
                body.append(f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="middle" fill="{MUTED}">–</text>')
                continue
            weight = float(attn_weights[i, j])
            fill = _blend(weight / darkest)
            ink = "#ffffff" if weight / darkest > 0.55 else INK
            body.append(f'<rect x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="{fill}" stroke="#ffffff"/>')
            body.append(
                f'<text x="{x0 + cell / 2:.1f}" y="{y0 + cell / 2 + 5:.1f}" text-anchor="middle" fill="{ink}">'
                f"{weight:.2f}</text>"
            )
    body.append("</g>")
    return _svg(left + len(columns) * cell + 16, top + len(words) * cell + 16, title, body)


def cross_attn_weights() -> str:
    """The cross-attention page's 6 x 8 weights: the dessert sentence's queries against 8 random tokens."""
    embedded = al.dessert_embedding()
    torch.manual_seed(123)
    cross_attn = al.CrossAttention(d_in=3, d_out_kq=2, d_out_v=4)
    second_input = torch.rand(8, 3)
    with torch.no_grad():
        attn_scores = (embedded @ cross_attn.W_query) @ (second_input @ cross_attn.W_key).T  # (6, 8)
    attn_weights = torch.softmax(attn_scores / 2**0.5, dim=-1)
    words = ("Life", "is", "short", "eat", "dessert", "first")
    keys = tuple(f"x2[{j}]" for j in range(8))
    return heatmap(attn_weights, words, "Cross-attention weights, 6 queries by 8 keys", None, keys, cell=46)


def journey_attn_weights() -> str:
    inputs = al.journey_inputs()
    attn_weights = torch.softmax(al.attn_scores_all(inputs), dim=-1)
    return heatmap(attn_weights, al.JOURNEY_WORDS, "Attention weights of the journey sentence", masked=None)


def causal_attn_weights() -> str:
    inputs = al.journey_inputs()
    mask = al.causal_mask(len(inputs))
    attn_weights = al.masked_softmax(al.attn_scores_all(inputs), mask)
    return heatmap(attn_weights, al.JOURNEY_WORDS, "Causal attention weights of the journey sentence", masked=mask)


def dropout_weights() -> str:
    """The dropout page's causal weights (CausalAttention, seed 123) after one dropout pattern with p = 0.5.

    The pattern is drawn with torch.rand from a seeded generator, not by nn.Dropout: the draws of
    nn.Dropout differ between CPUs (the dropout page says so), and a figure must be the same everywhere.
    Seed 5 is the first whose pattern shows every effect at once: "Your" keeps its weight (doubled to 2),
    every later row loses some, and no column is dropped entirely."""
    inputs = al.journey_inputs()
    torch.manual_seed(123)
    attention = al.CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.5)
    with torch.no_grad():
        queries, keys = attention.W_query(inputs), attention.W_key(inputs)
    mask = al.causal_mask(6)
    attn_weights = al.masked_softmax(queries @ keys.T / keys.shape[-1] ** 0.5, mask)
    keep = torch.rand(6, 6, generator=torch.Generator().manual_seed(5)) >= 0.5
    dropped = attn_weights * keep / (1 - 0.5)  # dropped: 0; kept: doubled
    return heatmap(dropped, al.JOURNEY_WORDS, "Causal attention weights after dropout with p = 0.5", masked=mask)


def _matrix(x: float, y: float, rows: int, cols: int, color: str, cell: int = 14) -> list[str]:
    """An empty rows x cols grid: a matrix drawn by its shape."""
    return [
        f'<rect x="{x + c * cell}" y="{y + r * cell}" width="{cell}" height="{cell}" fill="{color}" '
        f'fill-opacity="0.3" stroke="{MUTED}"/>'
        for r in range(rows)
        for c in range(cols)
    ]


def projections() -> str:
    """inputs (6, 3) @ W_query / W_key / W_value (3, 2) -> queries / keys / values (6, 2), by their shapes."""
    inputs = al.journey_inputs()
    d_in, d_out = inputs.shape[1], 2
    rows = [("W_query", "queries", HEAD_COLORS[0]), ("W_key", "keys", "#00897b"), ("W_value", "values", HEAD_COLORS[1])]
    cell, left = 16, 16
    body = [f'<g {MONO} font-size="13" fill="{INK}">']
    for index, (weight, result, color) in enumerate(rows):
        y = 28 + index * 150
        x_inputs, x_weight, x_result = left, left + 104, left + 226
        body.append(f'<text x="{x_inputs}" y="{y - 8}">inputs</text>')
        body += _matrix(x_inputs, y, len(inputs), d_in, "#9e9e9e", cell)
        body.append(f'<text x="{x_inputs}" y="{y + 6 * cell + 18}" fill="{MUTED}">({len(inputs)}, {d_in})</text>')
        body.append(f'<text x="{x_inputs + d_in * cell + 16}" y="{y + 3 * cell + 5}" font-size="16">@</text>')
        body.append(f'<text x="{x_weight}" y="{y - 8}">{weight}</text>')
        body += _matrix(x_weight, y, d_in, d_out, color, cell)
        body.append(f'<text x="{x_weight}" y="{y + d_in * cell + 18}" fill="{MUTED}">({d_in}, {d_out})</text>')
        body.append(f'<text x="{x_weight + 72}" y="{y + 3 * cell + 5}" font-size="16">→</text>')
        body.append(f'<text x="{x_result}" y="{y - 8}">{result}</text>')
        body += _matrix(x_result, y, len(inputs), d_out, color, cell)
        body.append(f'<text x="{x_result}" y="{y + 6 * cell + 18}" fill="{MUTED}">({len(inputs)}, {d_out})</text>')
    body.append("</g>")
    return _svg(left + 226 + 90, 28 + 3 * 150 - 26, "The three projections of the inputs, by their shapes", body)


def weight_blocks() -> str:
    """The multi-head page's W_query (seed 123, nn.Linear(3, 4)): its weight's rows in two blocks, head 0's
    and head 1's, each the (2, 3) weight that head would have as a module of its own in the wrapper."""
    torch.manual_seed(123)
    weight = torch.nn.Linear(3, 4, bias=False).weight.detach()  # (d_out, d_in) = (4, 3)
    cell_w, cell_h, left = 56, 28, 16

    def matrix(x0: float, y0: float, values: torch.Tensor, first_row: int) -> list[str]:
        parts = []
        for i, row in enumerate(values.tolist()):
            color = HEAD_COLORS[(first_row + i) // 2]
            for j, value in enumerate(row):
                shape = f'x="{x0 + j * cell_w}" y="{y0 + i * cell_h}" width="{cell_w}" height="{cell_h}"'
                parts.append(f'<rect {shape} fill="{color}" fill-opacity="0.25" stroke="#ffffff"/>')
                centre = x0 + j * cell_w + cell_w / 2
                parts.append(f'<text x="{centre}" y="{y0 + i * cell_h + 19}" text-anchor="middle">{value:.2f}</text>')
        return parts

    body = [f'<g {MONO} font-size="13" fill="{INK}">']
    body.append(f'<text x="{left}" y="20">W_query.weight: (d_out, d_in) = (4, 3)</text>')
    body += matrix(left, 30, weight, 0)
    for h in range(2):
        y = 30 + 4 * cell_h + 40 + h * (2 * cell_h + 40)
        body.append(f'<text x="{left}" y="{y - 10}">W_query.weight[{2 * h}:{2 * h + 2}]: head {h}, (2, 3)</text>')
        body += matrix(left, y, weight[2 * h : 2 * h + 2], 2 * h)
    body.append("</g>")
    return _svg(
        left + 3 * cell_w + 170, 30 + 4 * cell_h + 40 + 2 * (2 * cell_h + 40) - 14, "W_query's rows by head", body
    )


def _tensor_panel(x: int, y: int, rows: int, cols: int, heads: list[int], cell: int = 14) -> list[str]:
    """A rows x cols grid whose columns are colored by the head they belong to."""
    parts = []
    for c in range(cols):
        color = HEAD_COLORS[heads[c]]
        for r in range(rows):
            parts.append(
                f'<rect x="{x + c * cell}" y="{y + r * cell}" width="{cell}" height="{cell}" '
                f'fill="{color}" fill-opacity="0.75" stroke="#ffffff"/>'
            )
    return parts


def head_splitting() -> str:
    """The shapes of one batch element while MultiHeadAttention splits and merges heads (t=6, d_out=4, 2 heads)."""
    t, num_heads, head_dim = 6, 2, 2
    d_out = num_heads * head_dim
    cell, gap = 14, 10
    steps: list[tuple[str, str, Callable[[int, int], list[str]]]] = []

    def flat(x: int, y: int) -> list[str]:  # (t, d_out): the heads' columns side by side
        return _tensor_panel(x, y, t, d_out, [c // head_dim for c in range(d_out)])

    def split(x: int, y: int) -> list[str]:  # (t, h, hd): the same numbers, grouped by head
        parts = []
        for h in range(num_heads):
            parts += _tensor_panel(x + h * (head_dim * cell + 4), y, t, head_dim, [h] * head_dim)
        return parts

    def per_head(width: int) -> Callable[[int, int], list[str]]:  # (h, t, width): one matrix per head
        def draw(x: int, y: int) -> list[str]:
            parts = []
            for h in range(num_heads):
                x_h = x + h * (width * cell + gap) + (h and 14)
                parts += _tensor_panel(x_h, y, t, width, [h] * width)
                label = f'x="{x_h - 4}" y="{y + 11}" text-anchor="end" {MONO} font-size="12" fill="{MUTED}"'
                parts.append(f"<text {label}>{h}</text>")
            return parts

        return draw

    steps.append(("queries = W_query(x)", "(b, num_tokens, d_out) = (b, 6, 4)", flat))
    steps.append((".view(b, num_tokens, num_heads, head_dim)", "(b, 6, 2, 2)", split))
    steps.append((".transpose(1, 2)", "(b, num_heads, num_tokens, head_dim) = (b, 2, 6, 2)", per_head(head_dim)))
    steps.append(
        (
            "queries @ keys.transpose(2, 3)",
            "attn_scores: (b, num_heads, num_tokens, num_tokens) = (b, 2, 6, 6)",
            per_head(t),
        )
    )
    steps.append(("attn_weights @ values", "(b, num_heads, num_tokens, head_dim) = (b, 2, 6, 2)", per_head(head_dim)))
    steps.append((".transpose(1, 2)", "(b, num_tokens, num_heads, head_dim) = (b, 6, 2, 2)", split))
    steps.append((".contiguous().view(b, num_tokens, d_out)", "(b, num_tokens, d_out) = (b, 6, 4)", flat))

    # One step under the other, the code, its shape and then the tensor: narrow enough for a phone's screen
    # (drawn at 358 of its 400 px there, no text under 10 px).
    left, y, body = 24, 0, []
    for index, (code, shape, draw) in enumerate(steps):
        y += 30
        if index:
            body.append(
                f'<path d="M {left - 12} {y - 26} v 16" stroke="{MUTED}" stroke-width="1.5" fill="none"/>'
                f'<path d="M {left - 16} {y - 14} l 4 6 l 4 -6" stroke="{MUTED}" stroke-width="1.5" fill="none"/>'
            )
        body.append(f'<text x="{left}" y="{y}" {MONO} font-size="14" fill="{INK}">{escape(code)}</text>')
        # A long shape goes on more lines: its name (attn_scores:) on one, and its two forms on one each.
        name, _, rest = shape.rpartition(": ")
        forms = rest.split(" = ") if len(rest) > 40 else [rest]
        lines = ([f"{name}:"] if name else []) + [forms[0], *(f"= {form}" for form in forms[1:])]
        for line in lines:
            y += 18
            body.append(f'<text x="{left}" y="{y}" {MONO} font-size="12" fill="{MUTED}">{escape(line)}</text>')
        body += draw(left + 14, y + 10)
        y += 10 + t * cell
    legend_y = y + 22
    for h, color in enumerate(HEAD_COLORS):
        x = left + h * 120
        body.append(f'<rect x="{x}" y="{legend_y}" width="14" height="14" fill="{color}" fill-opacity="0.75"/>')
        body.append(f'<text x="{x + 20}" y="{legend_y + 12}" {MONO} font-size="13" fill="{INK}">head {h}</text>')
    width = 400
    return _svg(width, legend_y + 34, "Tensor shapes while splitting and merging attention heads", body)


#: The sequence the multi-head page shows the trained model (tokens from a vocabulary of 8).
TRAINED_EXAMPLE = (3, 1, 4, 1, 5, 2, 6, 5)


@functools.cache
def _trained_example_weights() -> tuple[torch.Tensor, torch.Tensor]:
    """The attention weights of ``PreviousTokens`` on the example, before and after the page's training."""
    torch.manual_seed(0)
    model = al.PreviousTokens()
    token_ids = torch.tensor([TRAINED_EXAMPLE])
    with torch.no_grad():
        _, before = model(token_ids)
    al.train_previous_tokens(model)
    with torch.no_grad():
        _, after = model(token_ids)
    return before[0], after[0]


def _head_panels(attn_weights: torch.Tensor, title: str) -> str:
    """One small heatmap per head, side by side: rows are query positions, columns key positions."""
    num_heads, t, _ = attn_weights.shape
    cell, left, top, gap = 24, 30, 52, 36
    mask = al.causal_mask(t)
    body = [f'<g {FONT} font-size="14" fill="{INK}">']
    for h in range(num_heads):
        x0 = left + h * (t * cell + gap)
        body.append(f'<text x="{x0 + t * cell / 2:.1f}" y="18" text-anchor="middle" {MONO}>head {h}</text>')
        for j in range(t):
            body.append(f'<text x="{x0 + j * cell + cell / 2:.1f}" y="{top - 8}" text-anchor="middle">{j}</text>')
        for i in range(t):
            y0 = top + i * cell
            body.append(f'<text x="{x0 - 8}" y="{y0 + cell / 2 + 5:.1f}" text-anchor="end">{i}</text>')
            for j in range(t):
                # Rounded: after 300 training steps the last digits may differ between CPUs.
                weight = round(float(attn_weights[h, i, j]), 2)
                fill = "#eceff1" if bool(mask[i, j]) else _blend(weight)
                x = x0 + j * cell
                body.append(f'<rect x="{x}" y="{y0}" width="{cell}" height="{cell}" fill="{fill}" stroke="#ffffff"/>')
    body.append("</g>")
    width = left + num_heads * (t * cell + gap) - gap + 12
    return _svg(width, top + t * cell + 12, title, body)


def trained_heads_before() -> str:
    return _head_panels(_trained_example_weights()[0], "Attention weights of two heads before training")


def trained_heads_after() -> str:
    return _head_panels(_trained_example_weights()[1], "Attention weights of two heads after training")


#: The paths the plots of "How PyTorch runs attention" draw, whole layers only (SDPA alone, without the
#: projections, is not comparable), with their color and marker (shape and color both
#: tell the lines apart, for readers who see only one of them).
PLOTTED_PATHS = {
    "ours": ("MultiHeadAttention", "#3f51b5", "circle"),
    "torch_mha": ("nn.MultiheadAttention, attn_mask", "#00897b", "square"),
    "torch_mha_weights": ("nn.MultiheadAttention, need_weights=True", "#ef6c00", "triangle"),
    "ours_explicit": ("MultiHeadAttention, use_sdpa=False", "#c62828", "cross"),
}


#: Marker outlines, as offsets from the data point.
MARKER_POINTS = {
    "square": [(-4.5, -4.5), (4.5, -4.5), (4.5, 4.5), (-4.5, 4.5)],
    "triangle": [(0, -6), (5.5, 4), (-5.5, 4)],
    "diamond": [(0, -6), (6, 0), (0, 6), (-6, 0)],
}


def _marker(kind: str, x: float, y: float, color: str) -> str:
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{color}"/>'
    if kind == "cross":
        return f'<path d="M{x - 5:.1f} {y - 5:.1f} l10 10 m0 -10 l-10 10" stroke="{color}" stroke-width="2.5"/>'
    points = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in MARKER_POINTS[kind])
    return f'<polygon points="{points}" fill="{color}"/>'


def _log_panel(top: float, title: str, tokens: list[int], series: dict[str, list[float]], unit: str) -> list[str]:
    """One log-log panel: tokens on x, ``unit`` on y, one line per path of ``PLOTTED_PATHS``."""
    left, width, height = 86, 430, 230
    low = min(min(values) for values in series.values())
    high = max(max(values) for values in series.values())
    decades = list(range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1))

    def x_of(n: int) -> float:
        return left + width * (math.log2(n) - math.log2(tokens[0])) / (math.log2(tokens[-1]) - math.log2(tokens[0]))

    def y_of(value: float) -> float:
        span = decades[-1] - decades[0]
        return top + height - height * (math.log10(value) - decades[0]) / span

    body = [f'<text x="{left}" y="{top - 14}" font-weight="bold" {MONO}>{escape(title)}</text>']
    for decade in decades:
        y = y_of(10.0**decade)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" stroke="#e0e0e0"/>')
        label = f"{10.0**decade:,.0f}" if decade >= 0 else f"{10.0**decade:g}"
        body.append(f'<text x="{left - 8}" y="{y + 5:.1f}" text-anchor="end">{label}</text>')
    for n in tokens:
        x = x_of(n)
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + height}" stroke="#e0e0e0"/>')
        body.append(f'<text x="{x:.1f}" y="{top + height + 20}" text-anchor="middle">{n:,}</text>')
    body.append(f'<text x="{left + width / 2}" y="{top + height + 42}" text-anchor="middle" {MONO}>num_tokens</text>')
    body.append(
        f'<text x="18" y="{top + height / 2}" text-anchor="middle" transform="rotate(-90 18 {top + height / 2})">'
        f"{escape(unit)}</text>"
    )
    for path, (_, color, marker) in PLOTTED_PATHS.items():
        points = [(x_of(n), y_of(value)) for n, value in zip(tokens, series[path], strict=True)]
        line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        body.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2.5"/>')
        body += [_marker(marker, x, y, color) for x, y in points]
    return body


def _attention_paths_plot(quantity: str, unit: str, title: str) -> str:
    """Forward (top) and forward + backward (bottom) of the benchmark's paths, with a legend below."""
    data = benchmark_tables.load("attention-cpu")
    tokens = data["tokens"]
    body = [f'<g {FONT} font-size="15" fill="{INK}">']
    # Code rather than words, so that one file serves every language.
    modes = (("forward", "layer(x)"), ("forward_backward", "layer(x).sum().backward()"))
    for index, (mode, label) in enumerate(modes):
        series = {path: data[quantity][mode][path] for path in PLOTTED_PATHS}
        # A measured 0.0 MiB (nothing the size of the weights) is drawn at the axis' floor, 0.1 MiB.
        series = {path: [max(value, 0.1) for value in values] for path, values in series.items()}
        body += _log_panel(48 + index * 320, label, tokens, series, unit)
    legend_top = 48 + 2 * 320 - 10
    for row, (label, color, marker) in enumerate(PLOTTED_PATHS.values()):
        y = legend_top + row * 26
        body.append(f'<line x1="30" y1="{y}" x2="62" y2="{y}" stroke="{color}" stroke-width="2.5"/>')
        body.append(_marker(marker, 46, y, color))
        body.append(f'<text x="74" y="{y + 5}" {MONO} font-size="14">{escape(label)}</text>')
    body.append("</g>")
    return _svg(540, legend_top + len(PLOTTED_PATHS) * 26 + 6, title, body)


def attention_paths_time() -> str:
    return _attention_paths_plot("ms", "ms", "Time of each attention path against the number of tokens")


def attention_paths_memory() -> str:
    return _attention_paths_plot("mib", "MiB", "Peak memory of each attention path against the number of tokens")


#: The words of the figures that have them, per language (a language without its own gets English's).
WORDS = {
    "en": {
        "strides_title": "Memory, shape and strides while splitting heads",
        "shape": "shape",
        "stride": "stride",
        "contiguous": "contiguous",
        "yes": "yes",
        "no": "no",
        "new_memory": "yes (copied to a new block of memory)",
        "read_order": "under each cell: when a reading in shape order gets to it",
        "head": "head",
        "masks_title": "The causal mask and a padding mask together",
        "right_padding": "right padding, valid_lens = 4",
        "left_padding": "left padding, 2 padding tokens first",
        "attended": "attended",
        "causal": "hidden by the causal mask",
        "padding": "hidden by the padding mask",
        "empty_rows": "rows 0 and 1: nothing left to attend to",
        "alignment_title": "Which rows of the causal mask a cached step needs",
        "full_mask": "the causal mask of all 5 tokens",
        "needed": "3 cached + 2 new: the new tokens' rows",
        "is_causal": "is_causal=True with 2 queries, 5 keys",
        "seen": "sees",
        "hidden": "hidden",
        "gqa_title": "Which key/value head each query head uses",
        "scores_title": "The attention scores of the query journey",
        "scores_panel": "attention scores: journey · each token",
        "pipeline_title": "From attention scores to the context vector of journey",
        "weights_panel": "attention weights: softmax of the scores (sum 1)",
        "context_panel": "context vector: the inputs weighted and summed",
        "dimension": "dimension",
        "scaling_title": "Softmax of the same 8 scores, without and with the scaling",
        "split_title": "Which numbers land in head 0, with and without transpose",
        "sharpness_title": "Average largest weight against the key size, without and with the scaling",
        "two_ways_title": "The two ways to mask, for the query starts",
        "way1_softmax": "way 1: softmax over all 6 keys",
        "way1_zero": "then the future keys set to 0",
        "way1_renormalize": "then divided by the row's sum",
        "way2": "way 2: the future scores set to -inf, then softmax",
        "sharpness_note": "average largest of 8 weights, 1000 random queries",
        "unscaled_bar": "softmax(scores)",
        "scaled_bar": "softmax(scores / √d_k)",
        "split_input": "x[0]: 3 tokens, d_out = 4, two heads of 2",
        "split_wrong": "wrong: head 0 of x.view(1, 2, 3, 2)",
        "split_right": "right: head 0 after view and transpose(1, 2)",
        "token": "token",
        "conventions_title": "One causal mask written in three conventions",
        "bottleneck_title": "An encoder-decoder without and with attention",
        "mask_cost_title": "The memory of a stored causal mask, drawn as area",
        "fold_title": "The rows of the folded batch, and the valid length each needs",
        "kinds_title": "The three kinds of attention in an encoder–decoder Transformer, and their masks",
        "kinds_note": "rows: queries, columns: keys",
        "kinds_tokens": "source s0–s3 (s3 is padding), target t0–t2",
        "enc_self": "Encoder self-attention",
        "dec_self": "Decoder self-attention",
        "cross": "Decoder cross-attention",
        "q_source": "queries: the source",
        "kv_source": "keys, values: the source",
        "q_target": "queries: the target so far",
        "kv_target": "keys, values: the target so far",
        "q_decoder": "queries: the decoder",
        "kv_encoder": "keys, values: the encoder's outputs",
        "mask_padding": "mask: the source's padding",
        "mask_causal": "mask: causal",
        "fold_row": "row {row}: sequence {sequence}, head {head}",
        "fold_note": "valid_lens = [3, 2]: sequence 0 has 3 valid keys, sequence 1 has 2",
        "mask_cost_note": (
            "each square is one boolean causal mask:\ncontext_length x context_length entries, area = bytes"
        ),
        "tokens": "tokens",
        "without": "without attention: the decoder gets the last state only",
        "with": "with attention: every state, weighted",
        "encoder": "encoder states",
        "decoder": "decoder step",
        "ours": "attention_lib, nn.MultiheadAttention: True = masked out",
        "sdpa": "F.scaled_dot_product_attention: True = may attend",
        "additive": "a float mask, added to the scores: -inf removes",
        "unscaled": "softmax(scores): one key takes all the weight",
        "scaled": "softmax(scores / √d_k), d_k = 1024: a soft distribution",
        "query_heads": "query heads",
        "kv_heads": "key/value heads",
        "groups": "query head i uses key/value head i // 2: right",
        "tiled": "query heads 1 and 2 get the other group's: wrong",
        "comma": ", ",
        "colon": ": ",
    },
    "zh": {
        "strides_title": "拆分多头时的内存、形状与步长",
        "shape": "形状",
        "stride": "步长",
        "contiguous": "连续",
        "yes": "是",
        "no": "否",
        "new_memory": "是（复制到了一块新内存）",
        "read_order": "格子下方的数字：按形状的顺序读取时，第几个读到它",
        "head": "头",
        "masks_title": "因果掩码与填充掩码合在一起",
        "right_padding": "右侧填充，valid_lens = 4",
        "left_padding": "左侧填充，前 2 个是填充词元",
        "attended": "参与注意力",
        "causal": "被因果掩码遮蔽",
        "padding": "被填充掩码遮蔽",
        "empty_rows": "第 0、1 行：没有可以关注的键",
        "alignment_title": "使用缓存的一步需要因果掩码的哪几行",
        "full_mask": "全部 5 个词元的因果掩码",
        "needed": "3 个已缓存 + 2 个新词元：新词元的行",
        "is_causal": "2 个查询、5 个键时的 is_causal=True",
        "seen": "可见",
        "hidden": "被遮蔽",
        "gqa_title": "每个查询头使用哪个键/值头",
        "scores_title": "查询 journey 的注意力分数",
        "scores_panel": "注意力分数：journey 与每个词元的点积",
        "pipeline_title": "从注意力分数到 journey 的上下文向量",
        "weights_panel": "注意力权重：分数的 softmax（和为 1）",
        "context_panel": "上下文向量：输入的加权和",
        "dimension": "维度",
        "scaling_title": "同样 8 个分数的 softmax：不缩放与缩放",
        "split_title": "有无 transpose 时，哪些数落进头 0",
        "sharpness_title": "最大权重的平均值随键的维度变化：不缩放与缩放",
        "two_ways_title": "两种加掩码的方法，以查询 starts 为例",
        "way1_softmax": "方法一：对全部 6 个键做 softmax",
        "way1_zero": "再把未来的键置为 0",
        "way1_renormalize": "再除以这一行的和",
        "way2": "方法二：先把未来的分数填成 -inf，再做 softmax",
        "sharpness_note": "8 个权重中最大者的平均值，1000 个随机查询",
        "unscaled_bar": "softmax(scores)",
        "scaled_bar": "softmax(scores / √d_k)",
        "split_input": "x[0]：3 个词元，d_out = 4，两个头，每个 2 维",
        "split_wrong": "错误：x.view(1, 2, 3, 2) 的头 0",
        "split_right": "正确：view 再 transpose(1, 2) 之后的头 0",
        "token": "词元",
        "conventions_title": "同一个因果掩码的三种写法",
        "bottleneck_title": "不带注意力与带注意力的编码器–解码器",
        "mask_cost_title": "存储的因果掩码占用的内存，按面积画出",
        "fold_title": "折叠后批量中的各行，以及每行需要的有效长度",
        "kinds_title": "编码器–解码器 Transformer 中的三种注意力及其掩码",
        "kinds_note": "行是查询，列是键",
        "kinds_tokens": "源句子 s0–s3（s3 是填充），目标序列 t0–t2",
        "enc_self": "编码器自注意力",
        "dec_self": "解码器自注意力",
        "cross": "解码器交叉注意力",
        "q_source": "查询：源句子",
        "kv_source": "键、值：源句子",
        "q_target": "查询：已生成的目标序列",
        "kv_target": "键、值：已生成的目标序列",
        "q_decoder": "查询：解码器",
        "kv_encoder": "键、值：编码器的输出",
        "mask_padding": "掩码：源句子的填充",
        "mask_causal": "掩码：因果掩码",
        "fold_row": "第 {row} 行：序列 {sequence}，头 {head}",
        "fold_note": "valid_lens = [3, 2]：序列 0 有 3 个有效的键，序列 1 有 2 个",
        "mask_cost_note": "每个正方形是一个布尔类型的因果掩码：\ncontext_length × context_length 个元素，面积即字节数",
        "tokens": "个词元",
        "without": "不带注意力：解码器只拿到最后一个隐状态",
        "with": "带注意力：所有隐状态，加权求和",
        "encoder": "编码器的隐状态",
        "decoder": "解码器的一步",
        "ours": "attention_lib、nn.MultiheadAttention：True = 被遮蔽",
        "sdpa": "F.scaled_dot_product_attention：True = 可以关注",
        "additive": "浮点掩码，加到分数上：-inf 表示去掉",
        "unscaled": "softmax(scores)：一个键拿走全部权重",
        "scaled": "softmax(scores / √d_k)，d_k = 1024：平缓的分布",
        "query_heads": "查询头",
        "kv_heads": "键/值头",
        "groups": "查询头 i 使用键/值头 i // 2：正确",
        "tiled": "查询头 1 和 2 用到了另一组的键/值头：错误",
        "comma": "，",
        "colon": "：",
    },
}


def _words(lang: str) -> dict[str, str]:
    return WORDS.get(lang, WORDS["en"])


def memory_strides(lang: str) -> str:
    """The 12 numbers of a (b=1, t=3, num_heads=2, head_dim=2) tensor in memory, step by step through head
    splitting: each step's shape and strides, whether it is contiguous, and the order in which reading the
    tensor in its shape's order visits the memory (computed from the strides torch reports)."""
    words = _words(lang)
    base = torch.arange(12).view(1, 3, 4)  # (b, num_tokens, d_out)
    split = base.view(1, 3, 2, 2)  # (b, num_tokens, num_heads, head_dim)
    heads = split.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    copied = heads.contiguous()
    steps = [
        ("x = torch.arange(12).view(1, 3, 4)", base, base, False),
        ("x = x.view(1, 3, 2, 2)", split, base, False),
        ("x = x.transpose(1, 2)", heads, base, False),
        ("x = x.contiguous()", copied, copied, True),
        ("x = x.view(1, 2, 6)", copied.view(1, 2, 6), copied, False),
    ]
    cell, left, row_height = 28, 20, 136
    body = [f'<g {FONT} font-size="14" fill="{INK}">']
    for index, (code, tensor, memory, copy) in enumerate(steps):
        y = 24 + index * row_height
        # Memory offset of each element, in the order of the tensor's shape (the last index fastest).
        offsets = [
            sum(i * step for i, step in zip(position, tensor.stride(), strict=True))
            for position in itertools.product(*map(range, tensor.shape))
        ]
        read_at = {offset: order for order, offset in enumerate(offsets)}
        shape = ", ".join(map(str, tensor.shape))
        stride = ", ".join(map(str, tensor.stride()))
        contiguous = words["new_memory"] if copy else words["yes"] if tensor.is_contiguous() else words["no"]
        body.append(f'<text x="{left}" y="{y}" {MONO} font-size="14">{escape(code)}</text>')
        described = f"{words['shape']} ({shape}){words['comma']}{words['stride']} ({stride})"
        body.append(f'<text x="{left}" y="{y + 22}" fill="{MUTED}">{described}</text>')
        contiguity = f"{words['contiguous']}{words['colon']}{contiguous}"
        body.append(f'<text x="{left}" y="{y + 42}" fill="{MUTED}">{contiguity}</text>')
        top = y + 54
        for slot, value in enumerate(memory.flatten().tolist()):
            x = left + slot * cell
            color = HEAD_COLORS[(value // 2) % 2]
            dash = ' stroke-dasharray="4 2"' if copy else ""
            body.append(
                f'<rect x="{x}" y="{top}" width="{cell}" height="{cell}" fill="{color}" fill-opacity="0.25" '
                f'stroke="{INK}"{dash}/>'
            )
            body.append(f'<text x="{x + cell / 2}" y="{top + 19}" text-anchor="middle">{value}</text>')
            body.append(
                f'<text x="{x + cell / 2}" y="{top + cell + 17}" text-anchor="middle" font-size="12" '
                f'fill="{MUTED}">{read_at[slot]}</text>'
            )
    legend = 24 + len(steps) * row_height - 14
    body.append(f'<text x="{left}" y="{legend}" font-size="13" fill="{MUTED}">{escape(words["read_order"])}</text>')
    for h, color in enumerate(HEAD_COLORS):
        x = left + h * 110
        body.append(
            f'<rect x="{x}" y="{legend + 12}" width="16" height="16" fill="{color}" fill-opacity="0.25" '
            f'stroke="{INK}"/>'
        )
        body.append(f'<text x="{x + 22}" y="{legend + 25}" font-size="14">{words["head"]} {h}</text>')
    body.append("</g>")
    return _svg(left + 12 * cell + left, legend + 40, words["strides_title"], body)


def causal_and_padding(lang: str) -> str:
    """The combined mask of 6 tokens under right padding (attention_lib's padding_mask) and under left
    padding: which keys each query attends to, which the causal mask hides and which the padding hides."""
    words = _words(lang)
    n = 6
    causal = al.causal_mask(n)  # (n, n)
    right = al.padding_mask(torch.tensor([4]), num_keys=n)[0]  # (1, n): keys 4, 5 are padding
    left = (torch.arange(n) < 2)[None, :]  # (1, n): keys 0, 1 are padding
    cell, gap, label = 26, 28, 22
    panel = label + n * cell
    colors = {"attended": "#c5cae9", "causal": "#eceff1", "padding": "#ffe0b2"}
    marks = {"attended": "", "causal": "–", "padding": "×"}
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    for index, (title, padding) in enumerate(((words["right_padding"], right), (words["left_padding"], left))):
        x0, y0 = 12 + index * (panel + gap), 44
        body.append(f'<text x="{x0}" y="{y0 - 26}" font-size="12">{escape(title)}</text>')
        for j in range(n):
            body.append(f'<text x="{x0 + label + j * cell + cell / 2}" y="{y0 - 6}" text-anchor="middle">{j}</text>')
        for i in range(n):
            y = y0 + i * cell
            body.append(f'<text x="{x0 + label - 8}" y="{y + 18}" text-anchor="end">{i}</text>')
            for j in range(n):
                kind = "padding" if bool(padding[0, j]) else "causal" if bool(causal[i, j]) else "attended"
                x = x0 + label + j * cell
                body.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{colors[kind]}" stroke="#ffffff"/>'
                )
                if marks[kind]:
                    mark = f'x="{x + cell / 2}" y="{y + 18}" text-anchor="middle" fill="{MUTED}"'
                    body.append(f"<text {mark}>{marks[kind]}</text>")
    legend = 44 + n * cell + 24
    body.append(
        f'<text x="{12 + panel + gap}" y="{legend}" font-size="12" fill="{MUTED}">{escape(words["empty_rows"])}</text>'
    )
    for row, kind in enumerate(("attended", "causal", "padding")):
        y = legend + 16 + row * 24
        body.append(f'<rect x="12" y="{y}" width="18" height="18" fill="{colors[kind]}" stroke="{MUTED}"/>')
        if marks[kind]:
            body.append(f'<text x="21" y="{y + 14}" text-anchor="middle" fill="{MUTED}">{marks[kind]}</text>')
        body.append(f'<text x="38" y="{y + 14}">{escape(words[kind])}</text>')
    body.append("</g>")
    return _svg(12 + 2 * panel + gap + 12, legend + 16 + 3 * 24 + 4, words["masks_title"], body)


def cache_alignment(lang: str) -> str:
    """The causal mask of 5 tokens with the rows of the 2 newest outlined, beside what a cached step of 2
    queries gets from attention_lib (bottom-right) and from is_causal=True (top-left)."""
    words = _words(lang)
    full = al.causal_mask(5)
    panels = [
        (words["full_mask"], full, (3, 5)),
        (words["needed"], al.causal_mask(2, 5, align="lower_right"), None),
        (words["is_causal"], al.causal_mask(2, 5, align="upper_left"), None),
    ]
    cell, left = 30, 14
    colors = {False: "#c5cae9", True: "#eceff1"}
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    y = 0
    for title, mask, outlined in panels:
        y += 26
        body.append(f'<text x="{left}" y="{y}" {MONO if title.startswith("is_causal") else ""}>{escape(title)}</text>')
        y += 10
        for i in range(mask.shape[0]):
            for j in range(mask.shape[1]):
                x = left + j * cell
                hidden = bool(mask[i, j])
                body.append(
                    f'<rect x="{x}" y="{y + i * cell}" width="{cell}" height="{cell}" fill="{colors[hidden]}" '
                    'stroke="#ffffff"/>'
                )
                if hidden:
                    mark = f'x="{x + cell / 2}" y="{y + i * cell + 20}" text-anchor="middle" fill="{MUTED}"'
                    body.append(f"<text {mark}>–</text>")
        if outlined:
            first, last = outlined
            body.append(
                f'<rect x="{left - 2}" y="{y + first * cell - 2}" width="{5 * cell + 4}" '
                f'height="{(last - first) * cell + 4}" fill="none" stroke="{HEAD_COLORS[1]}" stroke-width="3"/>'
            )
        y += mask.shape[0] * cell + 8
    y += 14
    for index, (hidden, word) in enumerate(((False, words["seen"]), (True, words["hidden"]))):
        x = left + index * 120
        body.append(f'<rect x="{x}" y="{y}" width="18" height="18" fill="{colors[hidden]}" stroke="{MUTED}"/>')
        body.append(f'<text x="{x + 26}" y="{y + 14}">{escape(word)}</text>')
    body.append("</g>")
    return _svg(left + 5 * cell + 200, y + 26, words["alignment_title"], body)


def kv_head_sharing(lang: str) -> str:
    """4 query heads and 2 key/value heads: the pairs repeat_interleave makes, and the pairs repeat makes."""
    words = _words(lang)
    kv_heads = torch.arange(2)
    pairings = [
        ("keys.repeat_interleave(2, dim=1)", kv_heads.repeat_interleave(2), words["groups"], HEAD_COLORS[0]),
        ("keys.repeat(1, 2, 1, 1)", kv_heads.repeat(2), words["tiled"], "#c62828"),
    ]
    box, left, step = 44, 16, 84
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    y = 0
    for code, used, verdict, color in pairings:
        y += 24
        body.append(f'<text x="{left}" y="{y}" {MONO} font-size="14">{escape(code)}</text>')
        y += 16
        body.append(f'<text x="{left}" y="{y + 2}" fill="{MUTED}">{escape(words["query_heads"])}</text>')
        top, bottom = y + 12, y + 112
        for q in range(4):  # query heads on top
            x = left + q * step
            body.append(f'<rect x="{x}" y="{top}" width="{box}" height="28" fill="#eceff1" stroke="{MUTED}"/>')
            body.append(f'<text x="{x + box / 2}" y="{top + 19}" text-anchor="middle">q{q}</text>')
            target = left + int(used[q]) * 2 * step + step / 2 + box / 2
            body.append(
                f'<line x1="{x + box / 2}" y1="{top + 28}" x2="{target}" y2="{bottom}" stroke="{color}" '
                'stroke-width="2"/>'
            )
        for k in range(2):  # key/value heads below, each under its group of two query heads
            x = left + k * 2 * step + step / 2
            shape = f'x="{x}" y="{bottom}" width="{box}" height="28"'
            body.append(f'<rect {shape} fill="{HEAD_COLORS[k]}" fill-opacity="0.25" stroke="{MUTED}"/>')
            body.append(f'<text x="{x + box / 2}" y="{bottom + 19}" text-anchor="middle">k{k}</text>')
        body.append(f'<text x="{left}" y="{bottom + 46}" fill="{MUTED}">{escape(words["kv_heads"])}</text>')
        body.append(f'<text x="{left}" y="{bottom + 66}">{escape(verdict)}</text>')
        y = bottom + 80
    body.append("</g>")
    return _svg(left + 3 * step + box + left + 24, y, words["gqa_title"], body)


def _bars(top: float, title: str, labels: list[str], values: list[float], color: str, slot: int = 56) -> list[str]:
    """A panel of vertical bars, one per label, each with its value above it: 88 px tall, ``slot`` px a bar."""
    left, height = 16, 88
    high = max(values)
    parts = [f'<text x="{left}" y="{top}" font-size="13">{escape(title)}</text>']
    base = top + 34 + height
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = left + index * slot
        bar = height * value / high
        parts.append(f'<rect x="{x + 10}" y="{base - bar:.1f}" width="{slot - 20}" height="{bar:.1f}" fill="{color}"/>')
        parts.append(
            f'<text x="{x + slot / 2}" y="{base - bar - 5:.1f}" text-anchor="middle" font-size="12">{value:.2f}</text>'
        )
        parts.append(
            f'<text x="{x + slot / 2}" y="{base + 17}" text-anchor="middle" font-size="12">{escape(label)}</text>'
        )
    parts.append(f'<line x1="{left}" y1="{base}" x2="{left + len(labels) * slot}" y2="{base}" stroke="{MUTED}"/>')
    return parts


def _journey_query() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The attention scores, weights and context vector of the query "journey", as the pages compute them."""
    inputs = al.journey_inputs()
    attn_scores_2 = al.attn_scores_for_query(inputs, inputs[1])
    attn_weights_2 = torch.softmax(attn_scores_2, dim=0)
    return attn_scores_2, attn_weights_2, al.context_vector_loop(inputs, attn_weights_2)


def query_scores(lang: str) -> str:
    words = _words(lang)
    attn_scores_2, _, _ = _journey_query()
    body = [
        f'<g {FONT} fill="{INK}">',
        *_bars(20, words["scores_panel"], list(al.JOURNEY_WORDS), attn_scores_2.tolist(), HEAD_COLORS[0]),
        "</g>",
    ]
    return _svg(16 + 6 * 56 + 16, 168, words["scores_title"], body)


def query_pipeline(lang: str) -> str:
    words = _words(lang)
    attn_scores_2, attn_weights_2, context_vec_2 = _journey_query()
    words_axis = list(al.JOURNEY_WORDS)
    body = [f'<g {FONT} fill="{INK}">']
    body += _bars(20, words["scores_panel"], words_axis, attn_scores_2.tolist(), HEAD_COLORS[0])
    body += _bars(184, words["weights_panel"], words_axis, attn_weights_2.tolist(), "#00897b")
    dimensions = [f"{words['dimension']} {d}" for d in range(3)]
    body += _bars(348, words["context_panel"], dimensions, context_vec_2.tolist(), HEAD_COLORS[1])
    body.append("</g>")
    return _svg(16 + 6 * 56 + 16, 496, words["pipeline_title"], body)


def softmax_scaling(lang: str) -> str:
    """The scoring-functions page's 8 scores (seed 123, d_k = 1024): softmax without and with the scaling."""
    words = _words(lang)
    torch.manual_seed(123)
    d_k = 1024
    q, k = torch.randn(d_k), torch.randn(8, d_k)
    attn_scores = k @ q  # (8,)
    keys = [f"k{j}" for j in range(8)]
    body = [f'<g {FONT} fill="{INK}">']
    body += _bars(20, words["unscaled"], keys, torch.softmax(attn_scores, dim=-1).tolist(), "#c62828", slot=44)
    scaled = torch.softmax(attn_scores / math.sqrt(d_k), dim=-1)
    body += _bars(184, words["scaled"], keys, scaled.tolist(), HEAD_COLORS[0], slot=44)
    body.append("</g>")
    return _svg(16 + 8 * 44 + 16, 332, words["scaling_title"], body)


def view_without_transpose(lang: str) -> str:
    """The pitfalls page's tensor: arange(12) as (1, 3, 4), and head 0 split with a plain view (wrong) and
    with view + transpose (right), each number colored by the head it belongs to."""
    words = _words(lang)
    x = torch.arange(12).view(1, 3, 4)
    wrong = x.view(1, 2, 3, 2)[0, 0]  # (3, 2)
    right = x.view(1, 3, 2, 2).transpose(1, 2)[0, 0]  # (3, 2)
    cell, height, left = 54, 36, 16
    body = [f'<g {FONT} font-size="13" fill="{INK}">']

    def grid(x0: float, y0: float, values: torch.Tensor) -> None:
        for i, row in enumerate(values.tolist()):
            body.append(f'<text x="{x0 - 6}" y="{y0 + i * height + 22}" text-anchor="end" fill="{MUTED}">{i}</text>')
            for j, value in enumerate(row):
                color = HEAD_COLORS[(value // 2) % 2]
                shape = f'x="{x0 + j * cell}" y="{y0 + i * height}" width="{cell}" height="{height}"'
                body.append(f'<rect {shape} fill="{color}" fill-opacity="0.25" stroke="{MUTED}"/>')
                # the number, and (small) the token it comes from
                centre = x0 + j * cell + cell / 2
                body.append(f'<text x="{centre}" y="{y0 + i * height + 16}" text-anchor="middle">{value}</text>')
                source = f"{words['token']} {value // 4}"
                body.append(
                    f'<text x="{x0 + j * cell + cell / 2}" y="{y0 + i * height + 30}" text-anchor="middle" '
                    f'font-size="10" fill="{MUTED}">{escape(source)}</text>'
                )

    body.append(f'<text x="{left}" y="20">{escape(words["split_input"])}</text>')
    grid(left + 20, 32, x[0])
    body.append(f'<text x="{left}" y="{32 + 3 * height + 30}">{escape(words["split_wrong"])}</text>')
    grid(left + 20, 32 + 3 * height + 42, wrong)
    top = 32 + 2 * (3 * height + 42)
    body.append(f'<text x="{left}" y="{top - 12}">{escape(words["split_right"])}</text>')
    grid(left + 20, top, right)
    legend = top + 3 * height + 26
    for h, color in enumerate(HEAD_COLORS):
        x0 = left + h * 110
        swatch = f'x="{x0}" y="{legend - 13}" width="16" height="16"'
        body.append(f'<rect {swatch} fill="{color}" fill-opacity="0.25" stroke="{MUTED}"/>')
        body.append(f'<text x="{x0 + 22}" y="{legend}">{words["head"]} {h}</text>')
    body.append("</g>")
    return _svg(360, legend + 12, words["split_title"], body)


def mask_conventions(lang: str) -> str:
    """The causal mask of 4 tokens as attention_lib and nn.MultiheadAttention take it, as SDPA takes it
    (al.to_sdpa_mask), and as a float mask added to the scores: the same hidden cells in each."""
    words = _words(lang)
    mask = al.causal_mask(4)
    additive = torch.zeros(4, 4).masked_fill(mask, float("-inf"))
    panels = [
        (words["ours"], [["True" if v else "False" for v in row] for row in mask.tolist()]),
        (words["sdpa"], [["True" if v else "False" for v in row] for row in al.to_sdpa_mask(mask).tolist()]),
        (words["additive"], [["-inf" if v == float("-inf") else "0" for v in row] for row in additive.tolist()]),
    ]
    cell_w, cell_h, left = 52, 24, 16
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    y = 0
    for title, cells in panels:
        y += 24
        body.append(f'<text x="{left}" y="{y}" font-size="12">{escape(title)}</text>')
        y += 8
        for i, row in enumerate(cells):
            for j, text in enumerate(row):
                hidden = bool(mask[i, j])
                fill = "#eceff1" if hidden else "#c5cae9"
                shape = f'x="{left + j * cell_w}" y="{y + i * cell_h}" width="{cell_w}" height="{cell_h}"'
                body.append(f'<rect {shape} fill="{fill}" stroke="#ffffff"/>')
                centre = left + j * cell_w + cell_w / 2
                body.append(f'<text x="{centre}" y="{y + i * cell_h + 17}" text-anchor="middle" {MONO}>{text}</text>')
        y += 4 * cell_h + 10
    body.append("</g>")
    return _svg(left + 4 * cell_w + 150, y + 6, words["conventions_title"], body)


def bottleneck(lang: str) -> str:
    """An encoder over the journey sentence, its decoder step reading only the last hidden state, and the
    same step reading every state with attention weights (those of the query "journey", from attention_lib,
    drawn as the width of each line)."""
    words = _words(lang)
    _, attn_weights_2, _ = _journey_query()
    box, step, left = 54, 60, 16
    body = [f'<g {FONT} font-size="12" fill="{INK}">']
    for panel, title in enumerate((words["without"], words["with"])):
        top = 22 + panel * 190
        body.append(f'<text x="{left}" y="{top}" font-size="13">{escape(title)}</text>')
        states_y, decoder_y = top + 30, top + 130
        for i, word in enumerate(al.JOURNEY_WORDS):
            x = left + i * step
            body.append(f'<rect x="{x}" y="{states_y}" width="{box}" height="40" fill="#eceff1" stroke="{MUTED}"/>')
            body.append(f'<text x="{x + box / 2}" y="{states_y + 17}" text-anchor="middle">{escape(word)}</text>')
            if i:  # the recurrence, state to state
                arrow = f'x1="{x - step + box}" y1="{states_y + 13}" x2="{x}" y2="{states_y + 13}"'
                body.append(f'<line {arrow} stroke="{MUTED}"/>')
        decoder_x = left + 5 * step / 2
        body.append(
            f'<rect x="{decoder_x}" y="{decoder_y}" width="{box}" height="26" fill="{HEAD_COLORS[1]}" '
            f'fill-opacity="0.25" stroke="{MUTED}"/>'
        )
        label = f'x="{decoder_x + box / 2}" y="{decoder_y + 42}" text-anchor="middle"'
        body.append(f"<text {label}>{escape(words['decoder'])}</text>")
        sources = [5] if panel == 0 else range(6)
        for i in sources:
            width = 2.5 if panel == 0 else 24 * float(attn_weights_2[i])
            x = left + i * step + box / 2
            body.append(
                f'<line x1="{x}" y1="{states_y + 40}" x2="{decoder_x + box / 2}" y2="{decoder_y}" '
                f'stroke="{HEAD_COLORS[0]}" stroke-width="{width:.1f}" stroke-opacity="0.7"/>'
            )
            if panel:  # the weight, in the box of the state it weighs
                weight = f"{float(attn_weights_2[i]):.2f}"
                body.append(f'<text x="{x}" y="{states_y + 33}" text-anchor="middle" fill="{MUTED}">{weight}</text>')
        body.append(f'<text x="{left}" y="{states_y - 6}" fill="{MUTED}">{escape(words["encoder"])}</text>')
    body.append("</g>")
    return _svg(left + 6 * step + 8, 22 + 2 * 190 - 10, words["bottleneck_title"], body)


def mask_cost(lang: str) -> str:
    """Causal masks of 1,024, 8,192 and 131,072 tokens as squares of proportional area: the bytes of a
    torch.bool mask (that of 1,024 tokens measured with attention_lib, the others, too large to build here,
    scaled by the square of the length)."""
    words = _words(lang)
    measured = al.causal_mask(1_024).nbytes  # 1 MiB, one byte per entry
    lengths = (1_024, 8_192, 131_072)
    side, left = 300, 16
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    # The note on two lines, for a phone's width.
    for row, line in enumerate(words["mask_cost_note"].split("\n")):
        body.append(f'<text x="{left}" y="{18 + row * 17}" font-size="12" fill="{MUTED}">{escape(line)}</text>')
    top = 52
    colors = ("#c62828", HEAD_COLORS[1], HEAD_COLORS[0])
    for length, color in reversed(list(zip(lengths, colors, strict=True))):
        size = side * length / lengths[-1]
        body.append(
            f'<rect x="{left}" y="{top + side - size:.2f}" width="{size:.2f}" height="{size:.2f}" '
            f'fill="{color}" fill-opacity="0.3" stroke="{color}"/>'
        )
    for row, (length, color) in enumerate(zip(lengths, colors, strict=True)):
        mib = measured * (length / 1_024) ** 2 / 2**20
        label = f"{length:,} {words['tokens']}{words['colon']}{mib:,.0f} MiB"
        y = top + side + 30 + row * 24
        swatch = f'x="{left}" y="{y - 12}" width="14" height="14"'
        body.append(f'<rect {swatch} fill="{color}" fill-opacity="0.3" stroke="{color}"/>')
        body.append(f'<text x="{left + 22}" y="{y}">{escape(label)}</text>')
    body.append("</g>")
    return _svg(left + side + 24, top + side + 30 + 3 * 24, words["mask_cost_title"], body)


def fold_order(lang: str) -> str:
    """D2L's fold (b, t, num_hiddens) -> (b * num_heads, t, head_dim), done by attention_lib.transpose_qkv
    on numbers that record their sequence and head: which sequence each row of the folded batch belongs to,
    and the valid length repeat_interleave and repeat give it."""
    words = _words(lang)
    b, num_heads, head_dim = 2, 2, 2
    # Element (sequence s, head h) holds 10 * s + h, so the folded rows say where they came from.
    x = torch.tensor([[[10 * s + h for h in range(num_heads) for _ in range(head_dim)]] for s in range(b)])
    rows = al.transpose_qkv(x.float(), num_heads)[:, 0, 0].long().tolist()  # (b * num_heads,)
    valid_lens = torch.tensor([3, 2])
    columns = [
        (".repeat_interleave(2)", valid_lens.repeat_interleave(num_heads).tolist()),
        (".repeat(2)", valid_lens.repeat(num_heads).tolist()),
    ]
    left, x_columns, top, height = 16, (206, 372), 56, 30
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    body.append(f'<text x="{left}" y="20" font-size="12" fill="{MUTED}">{escape(words["fold_note"])}</text>')
    for x_column, (code, _) in zip(x_columns, columns, strict=True):
        body.append(f'<text x="{x_column}" y="{top - 10}" text-anchor="middle" {MONO} font-size="12">{code}</text>')
    for row, value in enumerate(rows):
        sequence, head = divmod(value, 10)
        y = top + row * height
        body.append(
            f'<rect x="{left - 6}" y="{y}" width="{x_columns[1] + 44 - left}" height="{height - 4}" '
            f'fill="{HEAD_COLORS[sequence]}" fill-opacity="0.15"/>'
        )
        label = words["fold_row"].format(row=row, sequence=sequence, head=head)
        body.append(f'<text x="{left}" y="{y + 18}">{escape(label)}</text>')
        for x_column, (_, lengths) in zip(x_columns, columns, strict=True):
            right = lengths[row] == int(valid_lens[sequence])
            mark, color = ("✓", "#2e7d32") if right else ("✗", "#c62828")
            body.append(
                f'<text x="{x_column}" y="{y + 18}" text-anchor="middle" fill="{color}">{lengths[row]} {mark}</text>'
            )
    body.append("</g>")
    return _svg(x_columns[1] + 56, top + len(rows) * height + 8, words["fold_title"], body)


def sharpness(lang: str) -> str:
    """The scoring-functions page's experiment (seed 123): the average largest of 8 attention weights over
    1000 random queries, for d_k = 4, 64 and 1024, without and with the scaling, as pairs of bars."""
    words = _words(lang)
    torch.manual_seed(123)
    groups = []
    for d_k in (4, 64, 1024):
        q, k = torch.randn(1000, 1, d_k), torch.randn(1000, 8, d_k)
        attn_scores = q @ k.transpose(-2, -1)  # (1000, 1, 8)
        unscaled = float(torch.softmax(attn_scores, dim=-1).amax(dim=-1).mean())
        scaled = float(torch.softmax(attn_scores / math.sqrt(d_k), dim=-1).amax(dim=-1).mean())
        groups.append((d_k, unscaled, scaled))
    left, base, height, bar, group = 36, 190, 140, 34, 110
    colors = ("#c62828", HEAD_COLORS[0])
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    body.append(f'<text x="{left - 20}" y="20" font-size="12" fill="{MUTED}">{escape(words["sharpness_note"])}</text>')
    for index, (d_k, *values) in enumerate(groups):
        x0 = left + index * group
        for which, (value, color) in enumerate(zip(values, colors, strict=True)):
            x = x0 + which * (bar + 4)
            top = base - height * value
            body.append(f'<rect x="{x}" y="{top:.1f}" width="{bar}" height="{height * value:.1f}" fill="{color}"/>')
            label = f'x="{x + bar / 2}" y="{top - 5:.1f}" text-anchor="middle" font-size="12"'
            body.append(f"<text {label}>{value:.2f}</text>")
        body.append(
            f'<text x="{x0 + bar + 2}" y="{base + 18}" text-anchor="middle" {MONO} font-size="12">d_k = {d_k}</text>'
        )
    body.append(f'<line x1="{left - 8}" y1="{base}" x2="{left + 3 * group - 30}" y2="{base}" stroke="{MUTED}"/>')
    for row, (label, color) in enumerate(((words["unscaled_bar"], colors[0]), (words["scaled_bar"], colors[1]))):
        y = base + 44 + row * 22
        body.append(f'<rect x="{left - 20}" y="{y - 12}" width="14" height="14" fill="{color}"/>')
        body.append(f'<text x="{left}" y="{y}" {MONO} font-size="12">{escape(label)}</text>')
    body.append("</g>")
    return _svg(left + 3 * group + 10, base + 44 + 2 * 22, words["sharpness_title"], body)


def two_ways(lang: str) -> str:
    """The masks page's two ways for the query "starts" (SelfAttentionV2, seed 789): softmax, zero the
    future, renormalize; and fill the future with -inf, then softmax. Both end with the same weights."""
    words = _words(lang)
    inputs = al.journey_inputs()
    torch.manual_seed(789)
    attention = al.SelfAttentionV2(d_in=3, d_out=2)
    with torch.no_grad():
        queries, keys = attention.W_query(inputs), attention.W_key(inputs)
    attn_scores = (queries @ keys.T)[2] / keys.shape[-1] ** 0.5  # "starts", (6,)
    future = al.causal_mask(6)[2]  # (6,): keys 3, 4, 5
    softmax = torch.softmax(attn_scores, dim=-1)
    zeroed = softmax.masked_fill(future, 0.0)
    renormalized = zeroed / zeroed.sum()
    filled = torch.softmax(attn_scores.masked_fill(future, float("-inf")), dim=-1)
    panels = [
        (words["way1_softmax"], softmax, HEAD_COLORS[0]),
        (words["way1_zero"], zeroed, HEAD_COLORS[0]),
        (words["way1_renormalize"], renormalized, HEAD_COLORS[0]),
        (words["way2"], filled, HEAD_COLORS[1]),
    ]
    body = [f'<g {FONT} fill="{INK}">']
    for index, (title, values, color) in enumerate(panels):
        body += _bars(20 + index * 164, title, list(al.JOURNEY_WORDS), values.tolist(), color)
    body.append("</g>")
    return _svg(16 + 6 * 56 + 16, 20 + 4 * 164 - 16, words["two_ways_title"], body)


def attention_kinds(lang: str) -> str:
    """The cross-attention page's table as masks: which keys each query of the encoder's self-attention, the
    decoder's self-attention and the decoder's cross-attention may use, for a source of 4 tokens whose last
    is padding (attention_lib's padding_mask) and a target of 3 tokens (causal_mask)."""
    words = _words(lang)
    source, target = ["s0", "s1", "s2", "s3"], ["t0", "t1", "t2"]
    source_padding = al.padding_mask(torch.tensor([3]), num_keys=len(source))[0, 0]  # (4,): s3 is padding
    causal = al.causal_mask(len(target))  # (3, 3)
    kinds = [
        ("enc_self", source, source, ("q_source", "kv_source", "mask_padding")),
        ("dec_self", target, target, ("q_target", "kv_target", "mask_causal")),
        ("cross", target, source, ("q_decoder", "kv_encoder", "mask_padding")),
    ]
    colors = {"attended": "#c5cae9", "causal": "#eceff1", "padding": "#ffe0b2"}
    marks = {"attended": "", "causal": "–", "padding": "×"}
    cell, label, left, height = 20, 24, 12, 112
    text_x = left + label + 4 * cell + 20
    body = [f'<g {FONT} font-size="12" fill="{INK}">']
    body.append(f'<text x="{left}" y="18" fill="{MUTED}">{escape(words["kinds_note"])}</text>')
    body.append(f'<text x="{left}" y="34" fill="{MUTED}">{escape(words["kinds_tokens"])}</text>')
    for index, (title, queries, keys, lines) in enumerate(kinds):
        y0 = 68 + index * height
        for j, key in enumerate(keys):
            x = left + label + j * cell + cell / 2
            body.append(f'<text x="{x}" y="{y0 - 6}" text-anchor="middle" font-size="11">{key}</text>')
        for i, query in enumerate(queries):
            y = y0 + i * cell
            body.append(f'<text x="{left + label - 4}" y="{y + 14}" text-anchor="end" font-size="11">{query}</text>')
            for j, key in enumerate(keys):
                padded = key in source and bool(source_padding[source.index(key)])
                kind = "padding" if padded else "causal" if title == "dec_self" and bool(causal[i, j]) else "attended"
                x = left + label + j * cell
                body.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{colors[kind]}" stroke="#ffffff"/>'
                )
                if marks[kind]:
                    mark = f'x="{x + cell / 2}" y="{y + 14}" text-anchor="middle" fill="{MUTED}"'
                    body.append(f"<text {mark}>{marks[kind]}</text>")
        heading = f'x="{text_x}" y="{y0 + 10}" font-size="13" font-weight="bold"'
        body.append(f"<text {heading}>{escape(words[title])}</text>")
        for row, line in enumerate(lines):
            body.append(f'<text x="{text_x}" y="{y0 + 32 + row * 18}">{escape(words[line])}</text>')
    legend = 68 + 3 * height - 20
    for row, kind in enumerate(("attended", "causal", "padding")):
        y = legend + row * 24
        body.append(f'<rect x="{left}" y="{y}" width="18" height="18" fill="{colors[kind]}" stroke="{MUTED}"/>')
        if marks[kind]:
            body.append(f'<text x="{left + 9}" y="{y + 14}" text-anchor="middle" fill="{MUTED}">{marks[kind]}</text>')
        body.append(f'<text x="{left + 26}" y="{y + 14}">{escape(words[kind])}</text>')
    body.append("</g>")
    return _svg(400, legend + 3 * 24 + 4, words["kinds_title"], body)


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
}


COLOR = re.compile(r"#[0-9a-f]{6}\b")
#: The lightness of Material's dark ("slate") background, which shows through a dark figure.
DARK_FLOOR = 0.14


def _dark_color(match: re.Match[str]) -> str:
    """A color of a light figure, for the dark palette: the same hue and saturation, the lightness mirrored.

    Mirroring keeps every contrast of the light figure (dark ink on a pale cell becomes light ink on a dark
    cell, white text on a deep cell dark text on a bright one), and the head and line colors, of middle
    lightness, barely move."""
    red, green, blue = (int(match[0][i : i + 2], 16) / 255 for i in (1, 3, 5))
    hue, lightness, saturation = colorsys.rgb_to_hls(red, green, blue)
    # Mirrored onto [DARK_FLOOR, 1] rather than [0, 1]: white becomes the lightness of the dark page itself,
    # so that a grid line or a masked cell, a little darker than white, stays a little lighter than the page.
    rgb = colorsys.hls_to_rgb(hue, DARK_FLOOR + (1 - lightness) * (1 - DARK_FLOOR), saturation)
    return "#{:02x}{:02x}{:02x}".format(*(round(channel * 255) for channel in rgb))


def dark(svg: str) -> str:
    """The dark-palette version of a figure: no background of its own (the page's shows through), every
    other color mirrored in lightness (``_dark_color``)."""
    background = BACKGROUND.format(width=r"[\d.]+", height=r"[\d.]+")
    svg = re.sub(background, "", svg, count=1)
    return COLOR.sub(_dark_color, svg)


def dark_name(name: str) -> str:
    """``causal-attn-weights.svg`` -> ``causal-attn-weights-dark.svg``."""
    return f"{Path(name).stem}-dark.svg"


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
