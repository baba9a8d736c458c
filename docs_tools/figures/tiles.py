"""Softmax in tiles: one query's scores read a tile at a time, with the running max, factor and sum of each step."""

from __future__ import annotations

from html import escape

import torch

import attention_lib as al
from docs_tools.figures._svg import FONT, HEAD_COLORS, INK, MONO, MUTED, svg
from docs_tools.figures.words import words_in

#: The page's six scores (softmax-in-tiles.md, "A running max and a correction"), read in tiles of two.
SCORES = (1.0, 3.0, 2.0, 5.0, 0.0, 4.0)
TILE = 2


def online_steps(lang: str) -> str:
    """The six scores as bars, the tiles shaded behind them, and under each tile what attention_lib's
    ``tile_steps`` holds after it: the running max m (also drawn as a line over the tile), the factor
    exp(m_old - m_new) by which the sum so far was multiplied, and the running sum l."""
    words = words_in(lang)
    # One query whose scores are SCORES: a head of size 1 (scaled by 1/sqrt(1)), keys equal to the scores.
    keys = torch.tensor(SCORES)[:, None]  # (6, 1)
    query = torch.ones(1, 1)  # (1, 1)
    steps = list(al.tile_steps(query, keys, keys, tile_size=TILE))
    left, label, slot, top, height = 12, 176, 40, 44, 110
    high = max(SCORES)
    base = top + height
    body = [f'<g {FONT} font-size="12" fill="{INK}">']
    body.append(f'<text x="{left}" y="{top - 22}" fill="{MUTED}">{escape(words["tiles_scores"])}</text>')
    for number, step in enumerate(steps):
        x = left + label + step.start * slot
        width = (step.stop - step.start) * slot
        shade = "#eef0fa" if number % 2 == 0 else "#f6f7fc"
        body.append(f'<rect x="{x}" y="{top - 8}" width="{width}" height="{height + 8}" fill="{shade}"/>')
        body.append(
            f'<text x="{x + width / 2}" y="{top + 4}" text-anchor="middle" fill="{MUTED}">'
            f"{escape(words['tile'].format(i=number + 1))}</text>"
        )
        # The running max after this tile, over the tile: where it stands against the scores read so far.
        m = step.running_max.item()
        y = base - (height - 24) * m / high
        body.append(
            f'<line x1="{x + 2}" y1="{y:.1f}" x2="{x + width - 2}" y2="{y:.1f}" stroke="{HEAD_COLORS[1]}" '
            'stroke-width="2" stroke-dasharray="5 3"/>'
        )
    for j, score in enumerate(SCORES):
        bar = (height - 24) * score / high
        x = left + label + j * slot
        body.append(
            f'<rect x="{x + 8}" y="{base - bar:.1f}" width="{slot - 16}" height="{bar:.1f}" fill="{HEAD_COLORS[0]}"/>'
        )
        # The score under its bar, clear of the max lines drawn at the bars' tops.
        body.append(f'<text x="{x + slot / 2}" y="{base + 15}" text-anchor="middle" {MONO}>{score:g}</text>')
    body.append(
        f'<line x1="{left + label}" y1="{base}" x2="{left + label + len(SCORES) * slot}" y2="{base}" stroke="{MUTED}"/>'
    )
    # The table under the tiles: one row per quantity, one column per tile.
    rows = [
        (words["running_max"], [f"{step.running_max.item():g}" for step in steps]),
        (words["factor"], [f"{step.rescale.item():.4f}" for step in steps]),
        (words["running_sum"], [f"{step.running_sum.item():.4f}" for step in steps]),
    ]
    for row, (name, values) in enumerate(rows):
        y = base + 40 + row * 20
        body.append(f'<text x="{left}" y="{y}">{escape(name)}</text>')
        for step, value in zip(steps, values, strict=True):
            centre = left + label + (step.start + step.stop) / 2 * slot
            body.append(f'<text x="{centre}" y="{y}" text-anchor="middle" {MONO}>{value}</text>')
    note = base + 40 + len(rows) * 20 + 6
    body.append(
        f'<line x1="{left}" y1="{note - 12}" x2="{left + 24}" y2="{note - 12}" stroke="{HEAD_COLORS[1]}" '
        'stroke-width="2" stroke-dasharray="5 3"/>'
    )
    body.append(f'<text x="{left + 30}" y="{note - 8}" fill="{MUTED}">{escape(words["max_line"])}</text>')
    body.append("</g>")
    width = left + label + len(SCORES) * slot + left
    return svg(width, note + 4, words["tiles_title"], body)
