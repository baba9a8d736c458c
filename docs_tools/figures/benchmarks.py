"""The plots of "How PyTorch runs attention": time and peak memory of each attention path against the number of
tokens, log-log, from the benchmark's data (``benchmarks/data/``, read by ``docs_tools.benchmark_tables``)."""

from __future__ import annotations

import math
from html import escape

from docs_tools import benchmark_tables
from docs_tools.figures._svg import FONT, INK, MONO, svg

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
MARKER_POINTS: dict[str, list[tuple[float, float]]] = {
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
        # Low enough that the first, under the corner, clears the lowest label of the y axis.
        body.append(f'<text x="{x:.1f}" y="{top + height + 24}" text-anchor="middle">{n:,}</text>')
    body.append(f'<text x="{left + width / 2}" y="{top + height + 46}" text-anchor="middle" {MONO}>num_tokens</text>')
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
    return svg(540, legend_top + len(PLOTTED_PATHS) * 26 + 6, title, body)


def attention_paths_time() -> str:
    return _attention_paths_plot("ms", "ms", "Time of each attention path against the number of tokens")


def attention_paths_memory() -> str:
    return _attention_paths_plot("mib", "MiB", "Peak memory of each attention path against the number of tokens")
