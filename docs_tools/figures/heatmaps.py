"""Attention weights as heatmaps: a query per row, a key per column, the weight as the cell's shade (the
foundations, causal, dropout and cross-attention pages), and the two trained heads of the multi-head page."""

from __future__ import annotations

import functools
from html import escape

import torch

import attention_lib as al
from docs_tools.figures._svg import FONT, INK, MONO, MUTED, svg
from docs_tools.interactive import real_model_gpt2


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
    return svg(left + len(columns) * cell + 16, top + len(words) * cell + 16, title, body)


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
    return svg(width, top + t * cell + 12, title, body)


def trained_heads_before() -> str:
    return _head_panels(_trained_example_weights()[0], "Attention weights of two heads before training")


def trained_heads_after() -> str:
    return _head_panels(_trained_example_weights()[1], "Attention weights of two heads after training")


def gpt2_head_0() -> str:
    """Head 0 of layer 0 of the real-model page's GPT-2, as ``output_attentions=True`` returns it."""
    _, _, attn_weights = real_model_gpt2()
    title = "Attention weights of GPT-2's layer 0, head 0"
    return heatmap(attn_weights[0], al.JOURNEY_WORDS, title, masked=al.causal_mask(6))


def gpt2_head_1() -> str:
    _, _, attn_weights = real_model_gpt2()
    title = "Attention weights of GPT-2's layer 0, head 1"
    return heatmap(attn_weights[1], al.JOURNEY_WORDS, title, masked=al.causal_mask(6))
