"""Positions: how far RoPE turns each pair of dimensions of a head, position by position."""

from __future__ import annotations

from html import escape

import torch

import attention_lib as al
from docs_tools.figures._svg import FONT, HEAD_COLORS, INK, MONO, MUTED, svg
from docs_tools.figures.words import words_in


def rope_angles(lang: str) -> str:
    """A clock face for each pair of a head of 8 (rows) at each position 0 to 9 (columns), its hand at the angle
    by which attention_lib's RoPE turns that pair there (``rope_cos_sin``): pair 0 one radian a position, each
    later pair ten times slower."""
    words = words_in(lang)
    head_dim, num_positions = 8, 10
    cos, sin = al.rope_cos_sin(head_dim, torch.arange(num_positions))  # (10, 4) each
    freqs = al.rope_frequencies(head_dim)  # (4,): radians per position
    cell, radius, left, label, top = 34, 13, 12, 80, 40
    body = [f'<g {FONT} font-size="12" fill="{INK}">']
    # The header: the positions over the columns.
    body.append(f'<text x="{left}" y="{top - 12}" fill="{MUTED}">{escape(words["position"])}</text>')
    for p in range(num_positions):
        x = left + label + p * cell + cell / 2
        body.append(f'<text x="{x}" y="{top - 12}" text-anchor="middle">{p}</text>')
    for i in range(head_dim // 2):
        y = top + i * (cell + 8)
        centre_y = y + cell / 2
        body.append(f'<text x="{left}" y="{centre_y - 2}">{escape(words["pair"].format(i=i))}</text>')
        theta = f"θ = {freqs[i].item():g}"
        body.append(f'<text x="{left}" y="{centre_y + 13}" fill="{MUTED}" {MONO}>{theta}</text>')
        for p in range(num_positions):
            cx = left + label + p * cell + cell / 2
            # Counter-clockwise from pointing right: SVG's y grows downwards.
            tip_x = cx + radius * cos[p, i].item()
            tip_y = centre_y - radius * sin[p, i].item()
            body.append(
                f'<circle cx="{cx}" cy="{centre_y}" r="{radius}" fill="#eef0fa" stroke="{MUTED}" stroke-width="0.8"/>'
            )
            # Where every hand starts, at position 0.
            body.append(
                f'<line x1="{cx}" y1="{centre_y}" x2="{cx + radius}" y2="{centre_y}" stroke="#c5cae9" '
                'stroke-width="1"/>'
            )
            body.append(
                f'<line x1="{cx}" y1="{centre_y}" x2="{tip_x:.2f}" y2="{tip_y:.2f}" stroke="{HEAD_COLORS[0]}" '
                'stroke-width="2" stroke-linecap="round"/>'
            )
    notes = top + (head_dim // 2) * (cell + 8) + 10
    for row, line in enumerate(words["rope_note"].split("\n")):
        body.append(f'<text x="{left}" y="{notes + row * 17}" fill="{MUTED}">{escape(line)}</text>')
    body.append("</g>")
    width = left + label + num_positions * cell + left
    height = notes + 17 * len(words["rope_note"].split("\n"))
    return svg(width, height, words["rope_title"], body)
