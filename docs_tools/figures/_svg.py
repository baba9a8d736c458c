"""What every figure shares: the fonts and colors, the SVG document around a figure's body, the panel of bars
that several figures draw, and the dark palette (``dark``), derived from a light figure's colors."""

from __future__ import annotations

import colorsys
import re
from html import escape
from pathlib import Path

FONT = "font-family=\"ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', sans-serif\""
MONO = "font-family=\"ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace\""
INK = "#1f2937"
MUTED = "#6b7280"
HEAD_COLORS = ("#3f51b5", "#ef6c00")  # head 0, head 1: the same two colors in every panel
BACKGROUND = '<rect width="{width}" height="{height}" fill="#ffffff"/>'


def svg(width: int, height: int, title: str, body: list[str]) -> str:
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


def bars(
    top: float,
    title: str,
    labels: list[str],
    values: list[float],
    color: str,
    slot: int = 56,
    bar_width: int | None = None,
) -> list[str]:
    """A panel of vertical bars, one per label, each with its value above it: 88 px tall, ``slot`` px a bar and
    its label, the bar ``bar_width`` px wide in the middle of it (by default all of the slot but 20 px)."""
    left, height = 16, 88
    bar_width = slot - 20 if bar_width is None else bar_width
    high = max(values)
    parts = [f'<text x="{left}" y="{top}" font-size="13">{escape(title)}</text>']
    base = top + 34 + height
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = left + index * slot
        bar = height * value / high
        shape = f'x="{x + (slot - bar_width) // 2}" y="{base - bar:.1f}" width="{bar_width}" height="{bar:.1f}"'
        parts.append(f'<rect {shape} fill="{color}"/>')
        parts.append(
            f'<text x="{x + slot / 2}" y="{base - bar - 5:.1f}" text-anchor="middle" font-size="12">{value:.2f}</text>'
        )
        parts.append(
            f'<text x="{x + slot / 2}" y="{base + 17}" text-anchor="middle" font-size="12">{escape(label)}</text>'
        )
    parts.append(f'<line x1="{left}" y1="{base}" x2="{left + len(labels) * slot}" y2="{base}" stroke="{MUTED}"/>')
    return parts


COLOR = re.compile(r"#[0-9a-f]{6}\b")
#: The lightness of Material's dark ("slate") background, which shows through a dark figure.
DARK_FLOOR = 0.14


def dark_color(match: re.Match[str]) -> str:
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
    other color mirrored in lightness (``dark_color``)."""
    background = BACKGROUND.format(width=r"[\d.]+", height=r"[\d.]+")
    svg = re.sub(background, "", svg, count=1)
    return COLOR.sub(dark_color, svg)


def dark_name(name: str) -> str:
    """``causal-attn-weights.svg`` -> ``causal-attn-weights-dark.svg``."""
    return f"{Path(name).stem}-dark.svg"
