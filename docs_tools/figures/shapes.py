"""Tensors drawn by their shapes: the projections, splitting and merging heads, the strides in memory, a view
without its transpose, the folded batch of D2L's layout and the key/value heads that query heads share."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from html import escape

import torch

import attention_lib as al
from docs_tools.figures._svg import FONT, HEAD_COLORS, INK, MONO, MUTED, svg
from docs_tools.figures.words import words_in


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
    return svg(left + 226 + 90, 28 + 3 * 150 - 26, "The three projections of the inputs, by their shapes", body)


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
    return svg(
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
    return svg(width, legend_y + 34, "Tensor shapes while splitting and merging attention heads", body)


def memory_strides(lang: str) -> str:
    """The 12 numbers of a (b=1, t=3, num_heads=2, head_dim=2) tensor in memory, step by step through head
    splitting: each step's shape and strides, whether it is contiguous, and the order in which reading the
    tensor in its shape's order visits the memory (computed from the strides torch reports)."""
    words = words_in(lang)
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
    # The note on as many lines as its words say, each no wider than the strip of memory; the heads under it.
    note = 24 + len(steps) * row_height - 14
    lines = words["read_order"].split("\n")
    for row, line in enumerate(lines):
        body.append(f'<text x="{left}" y="{note + row * 17}" font-size="13" fill="{MUTED}">{escape(line)}</text>')
    legend = note + (len(lines) - 1) * 17
    for h, color in enumerate(HEAD_COLORS):
        x = left + h * 110
        body.append(
            f'<rect x="{x}" y="{legend + 12}" width="16" height="16" fill="{color}" fill-opacity="0.25" '
            f'stroke="{INK}"/>'
        )
        body.append(f'<text x="{x + 22}" y="{legend + 25}" font-size="14">{words["head"]} {h}</text>')
    body.append("</g>")
    return svg(left + 12 * cell + left, legend + 40, words["strides_title"], body)


def kv_head_sharing(lang: str) -> str:
    """4 query heads and 2 key/value heads: the pairs repeat_interleave makes, and the pairs repeat makes."""
    words = words_in(lang)
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
            x: float = left + q * step  # float: the key/value heads below sit at half steps
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
    return svg(left + 3 * step + box + left + 24, y, words["gqa_title"], body)


def view_without_transpose(lang: str) -> str:
    """The pitfalls page's tensor: arange(12) as (1, 3, 4), and head 0 split with a plain view (wrong) and
    with view + transpose (right), each number colored by the head it belongs to."""
    words = words_in(lang)
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
    return svg(360, legend + 12, words["split_title"], body)


def fold_order(lang: str) -> str:
    """D2L's fold (b, t, num_hiddens) -> (b * num_heads, t, head_dim), done by attention_lib.transpose_qkv
    on numbers that record their sequence and head: which sequence each row of the folded batch belongs to,
    and the valid length repeat_interleave and repeat give it."""
    words = words_in(lang)
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
    return svg(x_columns[1] + 56, top + len(rows) * height + 8, words["fold_title"], body)
