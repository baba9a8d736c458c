"""The masks: causal and padding together, the rows a cached step needs, the three conventions, the memory of a
stored mask, the three kinds of attention of an encoder–decoder, the two ways to apply a mask, and three masks
beyond the causal one (a sliding window, packed documents, left padding)."""

from __future__ import annotations

from html import escape

import torch

import attention_lib as al
from docs_tools.figures._svg import FONT, HEAD_COLORS, INK, MONO, MUTED, bars, svg
from docs_tools.figures.words import words_in


def _cell(x: float, y: float, cell: int, fill: str, mark: str, baseline: int) -> list[str]:
    """One cell of a mask's grid: its square, and its mark (what hides it), if any, ``baseline`` below its top."""
    square = f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="#ffffff"/>'
    if not mark:
        return [square]
    return [square, f'<text x="{x + cell / 2}" y="{y + baseline}" text-anchor="middle" fill="{MUTED}">{mark}</text>']


def causal_and_padding(lang: str) -> str:
    """The combined mask of 6 tokens under right padding (attention_lib's padding_mask) and under left
    padding: which keys each query attends to, which the causal mask hides and which the padding hides."""
    words = words_in(lang)
    n = 6
    causal = al.causal_mask(n)  # (n, n)
    right = al.padding_mask(torch.tensor([4]), num_keys=n)[0]  # (1, n): keys 4, 5 are padding
    left = (torch.arange(n) < 2)[None, :]  # (1, n): keys 0, 1 are padding
    cell, gap, label = 26, 28, 22
    panel = label + n * cell
    colors = {"attended": "#c5cae9", "causal": "#eceff1", "padding": "#ffe0b2"}
    marks = {"attended": "", "causal": "–", "padding": "×"}
    # A title on as many lines as its words say, none wider than a panel: the grids start under the longest.
    titles = [words["right_padding"].split("\n"), words["left_padding"].split("\n")]
    top = 44 + 15 * (max(map(len, titles)) - 1)
    body = [f'<g {FONT} font-size="13" fill="{INK}">']
    for index, (title, padding) in enumerate(zip(titles, (right, left), strict=True)):
        x0, y0 = 12 + index * (panel + gap), top
        for row, line in enumerate(title):
            body.append(f'<text x="{x0}" y="{18 + row * 15}" font-size="12">{escape(line)}</text>')
        for j in range(n):
            body.append(f'<text x="{x0 + label + j * cell + cell / 2}" y="{y0 - 6}" text-anchor="middle">{j}</text>')
        for i in range(n):
            y = y0 + i * cell
            body.append(f'<text x="{x0 + label - 8}" y="{y + 18}" text-anchor="end">{i}</text>')
            for j in range(n):
                kind = "padding" if bool(padding[0, j]) else "causal" if bool(causal[i, j]) else "attended"
                body += _cell(x0 + label + j * cell, y, cell, colors[kind], marks[kind], baseline=18)
    legend = top + n * cell + 24
    # Under the left-padded grid, whose rows 0 and 1 it explains, each line no wider than the grid.
    for row, line in enumerate(words["empty_rows"].split("\n")):
        note = f'x="{12 + panel + gap}" y="{legend + row * 15}" font-size="12" fill="{MUTED}"'
        body.append(f"<text {note}>{escape(line)}</text>")
    for row, kind in enumerate(("attended", "causal", "padding")):
        y = legend + 16 + row * 24
        body.append(f'<rect x="12" y="{y}" width="18" height="18" fill="{colors[kind]}" stroke="{MUTED}"/>')
        if marks[kind]:
            body.append(f'<text x="21" y="{y + 14}" text-anchor="middle" fill="{MUTED}">{marks[kind]}</text>')
        body.append(f'<text x="38" y="{y + 14}">{escape(words[kind])}</text>')
    body.append("</g>")
    return svg(12 + 2 * panel + gap + 12, legend + 16 + 3 * 24 + 4, words["masks_title"], body)


def cache_alignment(lang: str) -> str:
    """The causal mask of 5 tokens with the rows of the 2 newest outlined, beside what a cached step of 2
    queries gets from attention_lib (bottom-right) and from is_causal=True (top-left)."""
    words = words_in(lang)
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
    return svg(left + 5 * cell + 200, y + 26, words["alignment_title"], body)


def mask_conventions(lang: str) -> str:
    """The causal mask of 4 tokens as attention_lib and nn.MultiheadAttention take it, as SDPA takes it
    (al.to_sdpa_mask), and as a float mask added to the scores: the same hidden cells in each."""
    words = words_in(lang)
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
    return svg(left + 4 * cell_w + 150, y + 6, words["conventions_title"], body)


def mask_cost(lang: str) -> str:
    """Causal masks of 1,024, 8,192 and 131,072 tokens as squares of proportional area: the bytes of a
    torch.bool mask (that of 1,024 tokens measured with attention_lib, the others, too large to build here,
    scaled by the square of the length)."""
    words = words_in(lang)
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
    return svg(left + side + 24, top + side + 30 + 3 * 24, words["mask_cost_title"], body)


def two_ways(lang: str) -> str:
    """The masks page's two ways for the query "starts" (SelfAttentionV2, seed 789): softmax, zero the
    future, renormalize; and fill the future with -inf, then softmax. Both end with the same weights."""
    words = words_in(lang)
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
        body += bars(20 + index * 164, title, list(al.JOURNEY_WORDS), values.tolist(), color)
    body.append("</g>")
    return svg(16 + 6 * 56 + 16, 20 + 4 * 164 - 16, words["two_ways_title"], body)


def attention_kinds(lang: str) -> str:
    """The cross-attention page's table as masks: which keys each query of the encoder's self-attention, the
    decoder's self-attention and the decoder's cross-attention may use, for a source of 4 tokens whose last
    is padding (attention_lib's padding_mask) and a target of 3 tokens (causal_mask)."""
    words = words_in(lang)
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
                body += _cell(left + label + j * cell, y, cell, colors[kind], marks[kind], baseline=14)
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
    return svg(400, legend + 3 * 24 + 4, words["kinds_title"], body)


def masks_beyond(lang: str) -> str:
    """Three masks of 6 tokens from attention_lib, side by side: the sliding window of 3
    (``sliding_window_mask``), two packed documents of 2 and 4 tokens (``document_mask``) and a sequence of 4
    real tokens after 2 of left padding (``left_padded_causal_mask``): which keys each query attends to, which
    the causal mask hides and which the panel's own mask hides besides."""
    words = words_in(lang)
    n = 6
    causal = al.causal_mask(n)  # (n, n)
    panels = [
        (words["window_panel"], al.sliding_window_mask(n, 3)),  # (n, n)
        (words["document_panel"], al.document_mask(al.document_ids_from_lengths([2, 4]))),  # (n, n)
        (words["left_panel"], al.left_padded_causal_mask(torch.tensor([4]), n)[0]),  # (n, n)
    ]
    # Three grids side by side within a phone's 358 px, none of their text scaled down.
    cell, gap, label, left = 15, 12, 14, 10
    panel = label + n * cell
    colors = {"attended": "#c5cae9", "causal": "#eceff1", "beyond": "#ffe0b2"}
    marks = {"attended": "", "causal": "–", "beyond": "×"}
    titles = [title.split("\n") for title, _ in panels]
    top = 62 + 15 * (max(map(len, titles)) - 1)
    body = [f'<g {FONT} font-size="11" fill="{INK}">']
    body.append(f'<text x="{left}" y="16" font-size="12" fill="{MUTED}">{escape(words["kinds_note"])}</text>')
    for index, (title, (_, mask)) in enumerate(zip(titles, panels, strict=True)):
        x0 = left + index * (panel + gap)
        for row, line in enumerate(title):
            body.append(f'<text x="{x0}" y="{38 + row * 15}" font-size="12">{escape(line)}</text>')
        for j in range(n):
            body.append(f'<text x="{x0 + label + j * cell + cell / 2}" y="{top - 4}" text-anchor="middle">{j}</text>')
        for i in range(n):
            y = top + i * cell
            body.append(f'<text x="{x0 + label - 4}" y="{y + 11}" text-anchor="end">{i}</text>')
            for j in range(n):
                kind = "causal" if bool(causal[i, j]) else "beyond" if bool(mask[i, j]) else "attended"
                body += _cell(x0 + label + j * cell, y, cell, colors[kind], marks[kind], baseline=11)
    legend = top + n * cell + 18
    y = legend
    for kind in ("attended", "causal", "beyond"):
        lines = words[kind].split("\n")
        body.append(f'<rect x="{left}" y="{y}" width="16" height="16" fill="{colors[kind]}" stroke="{MUTED}"/>')
        if marks[kind]:
            body.append(f'<text x="{left + 8}" y="{y + 12}" text-anchor="middle" fill="{MUTED}">{marks[kind]}</text>')
        for row, line in enumerate(lines):
            body.append(f'<text x="{left + 24}" y="{y + 13 + row * 16}" font-size="12">{escape(line)}</text>')
        y += 8 + 16 * len(lines)
    body.append("</g>")
    return svg(left + 3 * panel + 2 * gap + left, y, words["beyond_title"], body)
