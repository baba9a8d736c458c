"""Every word of every figure fits, measured in a real browser with the fonts a reader has.

The figures (``docs_tools/figures/``) place their labels by coordinates worked out for an average font, but a
reader's browser draws them in whatever font the figure's ``font-family`` list finds first: on Debian and
Ubuntu that is DejaVu Sans (and DejaVu Sans Mono, Noto Sans CJK for Chinese), wider than many macOS and
Windows fonts. So each figure the site serves, in both languages and both palettes, is opened in headless
Chromium, which measures every ``<text>`` in the fonts of this machine, the same fonts as those readers'.

Each text's box is ``getBBox()``, the box of its glyphs' advances and of the font's full line height (ascent
and descent, not only the ink), taken through the text's own transform (a rotated label is a rotated box) into
the figure's coordinates. A box must lie inside the ``viewBox``, or the text is cut off at the figure's edge,
and no two boxes may overlap, or their words are drawn over each other.
"""

from __future__ import annotations

import itertools

import pytest

from docs_tools import figures

#: Every figure the generator writes, light and dark, in every language (``name.en.svg``, ``name.en-dark.svg``).
FIGURE_NAMES = sorted(path.name for path in figures.outputs())

#: How far, in the figure's pixels, a box may cross another box or the figure's edge. Touching is allowed, and a
#: box is not exact: Chromium rounds the font's ascent and descent to whole pixels (DejaVu Sans at 15 px: 13.92
#: and 3.54 become 14 and 4, a box 18 px tall for 17.46), so a box can be up to a pixel taller than the font's
#: own line, and two lines set one line height apart can overlap by up to that pixel; widths are in 1/64 px.
#: A pixel covers that rounding and nothing a reader would see: the smallest real overlap found was 3 px (the
#: plots' first tick label under the lowest one of the y axis), the review's 18 px.
TOLERANCE = 1.0

#: For each <text>: its words and the four corners of its box in the root's coordinates (those of the
#: viewBox), through every transform between them; and the viewBox.
MEASURE = """() => {
  const svg = document.documentElement;
  const toRoot = svg.getScreenCTM().inverse();
  const texts = [...document.querySelectorAll("text")].map(text => {
    const box = text.getBBox();
    const matrix = toRoot.multiply(text.getScreenCTM());
    const corners = [
      [box.x, box.y], [box.x + box.width, box.y],
      [box.x + box.width, box.y + box.height], [box.x, box.y + box.height],
    ].map(([x, y]) => { const point = new DOMPoint(x, y).matrixTransform(matrix); return [point.x, point.y]; });
    return {words: text.textContent, width: box.width, corners};
  });
  const view = svg.viewBox.baseVal;
  return {texts, view: [view.x, view.y, view.width, view.height]};
}"""

Point = tuple[float, float]


def overlap(first: list[Point], second: list[Point]) -> float:
    """How deep two convex quadrilaterals overlap, in pixels: the least overlap of their projections on the
    normals of their edges (separating axes); zero or less when they are apart."""
    depth = float("inf")
    for corners in (first, second):
        for (x0, y0), (x1, y1) in zip(corners, corners[1:] + corners[:1], strict=True):
            length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
            if length == 0:
                continue
            normal = (-(y1 - y0) / length, (x1 - x0) / length)
            a = [x * normal[0] + y * normal[1] for x, y in first]
            b = [x * normal[0] + y * normal[1] for x, y in second]
            depth = min(depth, min(max(a), max(b)) - max(min(a), min(b)))
    return depth


def outside(corners: list[Point], view: list[float]) -> float:
    """How far, in pixels, a box reaches past the edges of the viewBox (zero or less inside it)."""
    left, top, width, height = view
    return max(max(left - x, x - (left + width), top - y, y - (top + height)) for x, y in corners)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ([(0, 0), (10, 0), (10, 5), (0, 5)], [(12, 0), (20, 0), (20, 5), (12, 5)], -2),  # apart
        ([(0, 0), (10, 0), (10, 5), (0, 5)], [(10, 0), (20, 0), (20, 5), (10, 5)], 0),  # touching
        ([(0, 0), (10, 0), (10, 5), (0, 5)], [(7, 3), (20, 3), (20, 9), (7, 9)], 2),  # 3 across, 2 down
        # Two labels rotated by 45 degrees side by side: their upright bounding boxes overlap, they do not.
        ([(0, 0), (10, -10), (12, -8), (2, 2)], [(6, 0), (16, -10), (18, -8), (8, 2)], -(2**0.5)),
    ],
)
def test_overlap_measures_boxes_and_rotated_boxes(first: list[Point], second: list[Point], expected: float) -> None:
    assert overlap(first, second) == pytest.approx(expected)


def test_outside_measures_how_far_a_box_crosses_the_edge() -> None:
    view = [0.0, 0.0, 408.0, 300.0]
    assert outside([(12, 10), (400, 10), (400, 24), (12, 24)], view) == -8
    assert outside([(12, 10), (429, 10), (429, 24), (12, 24)], view) == 21  # the masks figure's, before its fix


@pytest.mark.parametrize("name", FIGURE_NAMES)
def test_every_label_is_inside_the_figure_and_clear_of_the_others(page, base_url: str, name: str) -> None:
    response = page.goto(f"{base_url}assets/figures/{name}", wait_until="load")
    assert response is not None
    assert response.ok, f"the site does not serve {name}"
    page.evaluate("document.fonts.ready.then(() => null)")
    measured = page.evaluate(MEASURE)
    view = measured["view"]
    texts = [text for text in measured["texts"] if text["width"] > 0]  # an empty text draws nothing
    assert texts, f"{name}: no text measured"
    cut = [
        f"{text['words']!r} by {distance:.1f} px"
        for text in texts
        if (distance := outside(text["corners"], view)) > TOLERANCE
    ]
    assert not cut, f"{name} ({view[2]:g} x {view[3]:g} px): texts cut off at the figure's edge: " + "; ".join(cut)
    overlapping = [
        f"{first['words']!r} and {second['words']!r} by {depth:.1f} px"
        for first, second in itertools.combinations(texts, 2)
        if (depth := overlap(first["corners"], second["corners"])) > TOLERANCE
    ]
    assert not overlapping, f"{name}: texts drawn over each other: " + "; ".join(overlapping)
