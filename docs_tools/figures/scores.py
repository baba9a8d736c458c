"""The query "journey" from its attention scores to its context vector, and the scaling by √d_k, as bar
charts; and the encoder–decoder without and with attention, weighted by the same query's weights."""

from __future__ import annotations

import math
from html import escape

import torch

import attention_lib as al
from docs_tools.figures._svg import FONT, HEAD_COLORS, INK, MONO, MUTED, bars, svg
from docs_tools.figures.words import words_in


def _journey_query() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The attention scores, weights and context vector of the query "journey", as the pages compute them."""
    inputs = al.journey_inputs()
    attn_scores_2 = al.attn_scores_for_query(inputs, inputs[1])
    attn_weights_2 = torch.softmax(attn_scores_2, dim=0)
    return attn_scores_2, attn_weights_2, al.context_vector_loop(inputs, attn_weights_2)


def query_scores(lang: str) -> str:
    words = words_in(lang)
    attn_scores_2, _, _ = _journey_query()
    body = [
        f'<g {FONT} fill="{INK}">',
        *bars(20, words["scores_panel"], list(al.JOURNEY_WORDS), attn_scores_2.tolist(), HEAD_COLORS[0]),
        "</g>",
    ]
    return svg(16 + 6 * 56 + 16, 168, words["scores_title"], body)


def query_pipeline(lang: str) -> str:
    words = words_in(lang)
    attn_scores_2, attn_weights_2, context_vec_2 = _journey_query()
    words_axis = list(al.JOURNEY_WORDS)
    body = [f'<g {FONT} fill="{INK}">']
    body += bars(20, words["scores_panel"], words_axis, attn_scores_2.tolist(), HEAD_COLORS[0])
    body += bars(184, words["weights_panel"], words_axis, attn_weights_2.tolist(), "#00897b")
    dimensions = [f"{words['dimension']} {d}" for d in range(3)]
    # The vector's 3 numbers over the width of the 6 tokens above: a label as wide as "dimension 0" fits under
    # its bar in any font, and the bars keep the width of the others.
    body += bars(
        348, words["context_panel"], dimensions, context_vec_2.tolist(), HEAD_COLORS[1], slot=112, bar_width=36
    )
    body.append("</g>")
    return svg(16 + 6 * 56 + 16, 496, words["pipeline_title"], body)


def softmax_scaling(lang: str) -> str:
    """The scoring-functions page's 8 scores (seed 123, d_k = 1024): softmax without and with the scaling."""
    words = words_in(lang)
    torch.manual_seed(123)
    d_k = 1024
    q, k = torch.randn(d_k), torch.randn(8, d_k)
    attn_scores = k @ q  # (8,)
    keys = [f"k{j}" for j in range(8)]
    body = [f'<g {FONT} fill="{INK}">']
    body += bars(20, words["unscaled"], keys, torch.softmax(attn_scores, dim=-1).tolist(), "#c62828", slot=44)
    scaled = torch.softmax(attn_scores / math.sqrt(d_k), dim=-1)
    body += bars(184, words["scaled"], keys, scaled.tolist(), HEAD_COLORS[0], slot=44)
    body.append("</g>")
    return svg(16 + 8 * 44 + 16, 332, words["scaling_title"], body)


def bottleneck(lang: str) -> str:
    """An encoder over the journey sentence, its decoder step reading only the last hidden state, and the
    same step reading every state with attention weights (those of the query "journey", from attention_lib,
    drawn as the width of each line)."""
    words = words_in(lang)
    _, attn_weights_2, _ = _journey_query()
    box, step, left = 54, 60, 16
    body = [f'<g {FONT} font-size="12" fill="{INK}">']
    for panel, title in enumerate((words["without"], words["with"])):
        top = 22 + panel * 190
        body.append(f'<text x="{left}" y="{top}" font-size="13">{escape(title)}</text>')
        states_y, decoder_y = top + 30, top + 130
        for i, word in enumerate(al.JOURNEY_WORDS):
            x: float = left + i * step  # float: the lines below start at half a box
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
    return svg(left + 6 * step + 8, 22 + 2 * 190 - 10, words["bottleneck_title"], body)


def sharpness(lang: str) -> str:
    """The scoring-functions page's experiment (seed 123): the average largest of 8 attention weights over
    1000 random queries, for d_k = 4, 64 and 1024, without and with the scaling, as pairs of bars."""
    words = words_in(lang)
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
    return svg(left + 3 * group + 10, base + 44 + 2 * 22, words["sharpness_title"], body)
