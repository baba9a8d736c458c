"""The notebooks as the built site renders them: every notebook page, and only they, rendered (not raw JSON)
with its outputs, a download and a Colab link, no math script, the chapter's heading ids, and no error shown
but those its chapter shows raising. (The notebooks themselves, run top to bottom: tests/pages/test_notebooks.py;
the pages in a browser: tests/site/test_notebook_pages.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import notebooks as make_notebooks

NOTEBOOKS = [(lang, page) for lang in make_notebooks.LANGUAGES for page in make_notebooks.CHAPTERS]
IDS = [f"{lang}/{page}" for lang, page in NOTEBOOKS]


def _page(site: Path, lang: str, page: str) -> Path:
    return site / site_config.url(lang, f"notebooks/{page}.ipynb") / "index.html"


@pytest.mark.parametrize(("lang", "page"), NOTEBOOKS, ids=IDS)
def test_notebook_is_rendered_on_the_site_with_download_and_colab(site: Path, lang: str, page: str) -> None:
    html = _page(site, lang, page).read_text(encoding="utf-8")
    # Rendered, not the raw JSON that mkdocs-static-i18n lets through (ultrabug/mkdocs-static-i18n#198).
    assert html.lstrip().startswith("<!doctype html>"), "the notebook was copied through as raw JSON"
    assert "jupyter-wrapper" in html
    assert f'<html lang="{lang}"' in html
    notebook = json.loads(make_notebooks.target(page, lang).read_text(encoding="utf-8"))
    cells = html.count('id="cell-id=')
    assert cells == len(notebook["cells"])
    # Outputs are on the page.
    assert "jp-OutputArea-output" in html
    # Download: the .ipynb beside the page.
    assert re.search(rf'<a href="{page}\.ipynb" download', html)
    assert (_page(site, lang, page).parent / f"{page}.ipynb").is_file()
    # Colab: the same file in the repository.
    colab = f"https://colab.research.google.com/github/attention-docs/attention-docs/blob/main/docs/{lang}/notebooks/{page}.ipynb"
    assert f'href="{colab}"' in html
    # No formula is left to MathJax (mkdocs-jupyter's default loads it from a CDN): KaTeX typeset them at
    # build time (tests/site/test_math.py counts them), and the page loads no math script at all.
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]*)"', html)
    assert [src for src in scripts if re.search("mathjax|katex|math\\.js", src, re.IGNORECASE)] == []
    assert "x-mathjax-config" not in html
    text = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert ('<span class="katex">' in html) == ("$" in text), "a formula of the notebook is not typeset"


@pytest.mark.parametrize(("lang", "page"), NOTEBOOKS, ids=IDS)
def test_notebook_headings_keep_the_chapters_ids(site: Path, lang: str, page: str) -> None:
    """mkdocs-jupyter's ASCII-only ids would leave every Chinese heading with id="" (and break search)."""
    html = _page(site, lang, page).read_text(encoding="utf-8")
    ids = re.findall(r'<h[1-6] id="([^"]*)"', html.split('class="md-content"', 1)[1])
    chapter = re.findall(
        r'<h[1-6] id="([^"]*)"',
        (site / site_config.url(lang, f"{page}.md") / "index.html")
        .read_text(encoding="utf-8")
        .split('class="md-content"', 1)[1],
    )
    assert "" not in ids
    assert len(ids) == len(set(ids))
    assert ids == chapter


def test_only_notebooks_become_notebook_pages(site: Path) -> None:
    """mkdocs-jupyter's default include would turn every .py and .md under docs/ into a notebook page."""
    config = site_config.config()
    jupyter = next(
        plugin["mkdocs-jupyter"]
        for plugin in config["plugins"]
        if isinstance(plugin, dict) and "mkdocs-jupyter" in plugin
    )
    assert jupyter["include"] == ["*.ipynb"]
    assert jupyter["allow_errors"] is False
    pages = {path.relative_to(site).as_posix() for path in site.rglob("index.html")}
    rendered = {page for page in pages if "jupyter-wrapper" in (site / page).read_text(encoding="utf-8")}
    assert rendered == {_page(site, lang, page).relative_to(site).as_posix() for lang, page in NOTEBOOKS}


@pytest.mark.parametrize(("lang", "page"), NOTEBOOKS, ids=IDS)
def test_only_cells_the_page_shows_raising_show_an_error(site: Path, lang: str, page: str) -> None:
    """With allow_errors at its default a failing cell would be rendered as output; none may be, but those
    the chapter deliberately shows raising."""
    notebook = json.loads(make_notebooks.target(page, lang).read_text(encoding="utf-8"))
    tagged = sum("raises-exception" in cell["metadata"].get("tags", []) for cell in notebook["cells"])
    content = _page(site, lang, page).read_text(encoding="utf-8").split('class="md-content"', 1)[1]
    assert len(re.findall(r'<div[^>]*data-mime-type="application/vnd.jupyter.stderr"', content)) == tagged
