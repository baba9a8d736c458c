"""The figures keep their room while they load (hooks/figures.py): every figure of the site has its SVG's width and
height, and a page whose figures arrive late moves nothing under a reader, on a desktop and on a phone."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

IMAGE = re.compile(r'<img [^>]*class="attention-figure"[^>]*>')
SOURCE = re.compile(r'src="(?:[^"]*/)?assets/figures/([\w.-]+\.svg)')
SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)"[^>]*?\bheight="([\d.]+)"')


def test_every_figure_has_the_size_of_its_svg(site: Path) -> None:
    seen = 0
    for path in site.rglob("*.html"):
        for image in IMAGE.findall(path.read_text(encoding="utf-8")):
            (name,) = SOURCE.findall(image)
            width, height = SIZE.search((site / "assets" / "figures" / name).read_text(encoding="utf-8")).groups()
            assert f'width="{width}" height="{height}"' in image, f"{path.relative_to(site)}: {image[-120:]}"
            seen += 1
    assert seen > 100  # every chapter's figures, in both languages and both palettes


@pytest.mark.parametrize("url", ["masks-beyond-causal/", "zh/masks/"])
@pytest.mark.parametrize("width", [1280, 390])
def test_a_page_whose_figures_come_late_moves_nothing(page, load, base_url, url, width, largest_shift) -> None:
    """Each SVG held back 300 ms, as on a slow connection: the text below the first figure is on the screen
    before it arrives, and stays where it is."""

    def late(route) -> None:
        time.sleep(0.3)
        route.continue_()

    page.set_viewport_size({"width": width, "height": 844})
    page.route("**/assets/figures/*.svg", late)
    try:
        load(page, base_url + url)
        assert largest_shift(page) <= 2  # KaTeX's fonts may move a line by a pixel
        figure = page.locator("img.attention-figure:visible").first
        box = figure.bounding_box()
        assert box["width"] <= width
        natural = figure.evaluate("img => img.naturalWidth / img.naturalHeight")
        assert abs(box["width"] / box["height"] - natural) < 0.02  # drawn at its own ratio, narrowed or not
    finally:
        page.unroute("**/assets/figures/*.svg")
