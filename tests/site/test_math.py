"""Math is typeset at build time (hooks/math.py): the built pages hold KaTeX's HTML and MathML, a formula
KaTeX cannot parse fails the build, only pages with math load KaTeX's stylesheet, and no page loads a math
script. In Chromium with JavaScript off, the formulas show typeset in KaTeX's fonts, never as TeX.
"""

from __future__ import annotations

import html as html_module
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mkdocs.exceptions import PluginError

from docs_tools import config as site_config
from docs_tools import katex, records

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LANGUAGES = tuple(site_config.complete_locales())  # mkdocs.yml: English and every complete translation
CHAPTERS = records.pages()  # the English pages, as paths relative to docs/en
NOTEBOOKS = sorted(path.name for path in (DOCS / "en" / "notebooks").glob("*.ipynb"))
CSS = "assets/vendor/katex/katex.min.css"
#: What no page may load any more: the scripts that typeset in the browser, and MathJax's.
MATH_SCRIPTS = re.compile(r"katex(?:\.min)?\.js|auto-render|math\.js|mathjax", re.IGNORECASE)

# ---------------------------------------------------------------------------------------------------
# The formulas in the sources, counted without the parsers the build uses
# ---------------------------------------------------------------------------------------------------
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,}).*?^(?P=indent)(?P=fence)[ \t]*$", re.MULTILINE | re.DOTALL
)
CODE_SPAN = re.compile(r"(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)", re.DOTALL)
DISPLAY = re.compile(r"\$\$.+?\$\$", re.DOTALL)
INLINE = re.compile(r"(?<![\\$])\$(?![\s$]).*?(?<![\s\\$])\$(?!\d)", re.DOTALL)


def formulas_in(markdown: str) -> int:
    """How many ``$…$`` and ``$$…$$`` formulas ``markdown`` has outside code blocks and code spans."""
    text = CODE_SPAN.sub("", FENCE.sub("", markdown))
    return len(DISPLAY.findall(text)) + len(INLINE.findall(DISPLAY.sub("", text)))


def _notebook_markdown(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")


def test_the_formula_count_can_fail() -> None:
    """The independent count agrees with the build on the forms the pages use, and skips code."""
    sample = (
        "Inline $a_i$ and $\\sqrt{d_k}$, display:\n\n$$\nx = 1\n$$\n\n"
        "`$not math$` and\n\n```python\nprint('$1 and $2')\n```\n"
    )
    assert formulas_in(sample) == 3


# (url of the built page, relative to the site; the source it is built from) for every page with content.
PAGES = [
    (
        site_config.url(lang, chapter),
        DOCS / lang / chapter,
    )
    for lang in LANGUAGES
    for chapter in CHAPTERS
] + [
    (
        site_config.url(lang, f"notebooks/{notebook}"),
        DOCS / lang / "notebooks" / notebook,
    )
    for lang in LANGUAGES
    for notebook in NOTEBOOKS
]


def _source_formulas(source: Path) -> int:
    text = source.read_text(encoding="utf-8") if source.suffix == ".md" else _notebook_markdown(source)
    return formulas_in(text)


def _content(site: Path, url: str) -> str:
    """The page's own content (after the navigation and before the footer)."""
    html = (site / url / "index.html").read_text(encoding="utf-8")
    return html.split('class="md-content"', 1)[1].split('<footer class="md-footer"', 1)[0]


def _prose(content: str) -> str:
    """The text a reader sees outside code and formulas (and outside MathML's TeX annotation)."""
    for tag in ("pre", "code", "script", "style", "annotation"):
        content = re.sub(rf"<{tag}\b.*?</{tag}>", " ", content, flags=re.DOTALL)
    # mkdocs-jupyter's hidden copy of each code cell's source, for its copy button: code, not prose.
    content = re.sub(r'<div class="clipboard-copy-txt"[^>]*>.*?</div>', " ", content, flags=re.DOTALL)
    return html_module.unescape(re.sub(r"<[^>]+>", " ", content))


def _leftover_tex(prose: str) -> list[str]:
    """TeX that was not typeset: delimiters, dollar formulas, or TeX commands such as ``\\frac``."""
    return re.findall(r"\\[()\[\]]|\$[^$]*\$|\\[A-Za-z]+", prose)


@pytest.mark.parametrize(("url", "source"), PAGES, ids=[url or "home" for url, _ in PAGES])
def test_every_formula_is_typeset_with_mathml_and_no_tex_is_left(site: Path, url: str, source: Path) -> None:
    content = _content(site, url)
    expected = _source_formulas(source)
    assert content.count('<span class="katex">') == expected, f"{url}: formulas typeset vs in {source.name}"
    # MathML for screen readers, with the visual HTML hidden from them (so a formula is read once).
    assert content.count('<math xmlns="http://www.w3.org/1998/Math/MathML"') == expected
    assert content.count('<span class="katex-html" aria-hidden="true">') == expected
    assert "katex-error" not in content
    assert _leftover_tex(_prose(content)) == [], f"{url}: TeX left as text"


def test_the_leftover_tex_check_can_fail() -> None:
    for shown in ("<p>\\(x\\)</p>", "<p>\\[x\\]</p>", "<p>where $\\omega_{2i}$ is</p>", "<p>$$x$$</p>"):
        assert _leftover_tex(_prose(shown)), shown
    kept = "<pre><code>print('$1 $2')</code></pre><p>cost</p><annotation>\\frac{a}{b}</annotation>"
    assert _leftover_tex(_prose(kept)) == []


# ---------------------------------------------------------------------------------------------------
# What the pages load
# ---------------------------------------------------------------------------------------------------
def _loaded(html: str) -> list[str]:
    """Every stylesheet and script a page loads, as written in it."""
    return re.findall(r"<link\b[^>]*\bhref=\"([^\"]+)\"", html) + re.findall(r"<script\b[^>]*\bsrc=\"([^\"]+)\"", html)


def test_only_pages_with_math_link_katex_css_and_no_page_loads_a_math_script(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    with_math = 0
    for path in pages:
        html = path.read_text(encoding="utf-8")
        where = path.relative_to(site).as_posix()
        loaded = _loaded(html)
        katex = [url for url in loaded if "katex" in url.lower()]
        if '<span class="katex">' in html:
            with_math += 1
            assert katex == [os.path.relpath(site / CSS, path.parent).replace(os.sep, "/")], where
        else:
            assert katex == [], f"{where} has no math but loads {katex}"
        assert [url for url in loaded if MATH_SCRIPTS.search(url)] == [], where
        assert "text/x-mathjax-config" not in html, f"{where}: MathJax's configuration script"
    assert with_math == sum(1 for _, source in PAGES if _source_formulas(source)), "pages with math"


def test_the_site_serves_katex_css_and_woff2_fonts_only(site: Path) -> None:
    katex = site / "assets" / "vendor" / "katex"
    served = sorted(path.relative_to(katex).as_posix() for path in katex.rglob("*") if path.is_file())
    fonts = [name for name in served if name.startswith("fonts/")]
    assert served == sorted(["katex.min.css", *fonts])
    assert fonts
    assert all(name.endswith(".woff2") for name in fonts)
    # Every font the stylesheet names is there, and it names woff2 only.
    named = re.findall(r"url\(([^)]+)\)", (katex / "katex.min.css").read_text(encoding="utf-8"))
    assert sorted(named) == fonts
    assert list(site.rglob("katex.min.js")) == []
    assert list(site.rglob("math.js")) == []


# ---------------------------------------------------------------------------------------------------
# The hook's typesetting, and a build with a formula KaTeX cannot parse
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine():
    """The KaTeX engine hooks/math.py typesets with, closed afterwards."""
    engine = katex.KaTeX(ROOT / katex.KATEX_JS)
    yield engine
    engine.close()


def test_typeset_reads_tex_through_html_escapes(engine) -> None:
    page = (
        '<p>If <span class="arithmatex">\\(a &lt; b\\)</span> then</p>\n'
        '<div class="arithmatex">\\[f(x) = \\begin{cases} 1 &amp; x &gt; 0 \\\\ 0 &amp; \\text{else} '
        "\\end{cases}\\]</div>"
    )
    html, count = katex.typeset(page, engine, "en/sample.md")
    assert count == 2
    assert html.count('<span class="katex">') == 2
    assert html.count("katex-display") == 1
    assert '<annotation encoding="application/x-tex">a &lt; b</annotation>' in html
    assert "<mo>&lt;</mo>" in html
    assert "\\(" not in html
    assert "\\[" not in html
    assert html.startswith('<p>If <span class="arithmatex"><span class="katex">')


@pytest.mark.parametrize("formula", ["\\(\\frac{a\\)", "\\(x^{\\)", "\\(\\notacommand{x}\\)"])
def test_a_formula_katex_cannot_parse_names_the_page_and_the_formula(engine, formula: str) -> None:
    page = f'<p>fine <span class="arithmatex">\\(x\\)</span>, broken <span class="arithmatex">{formula}</span></p>'
    with pytest.raises(PluginError, match="KaTeX cannot typeset") as error:
        katex.typeset(page, engine, "zh/masks.md")
    assert str(error.value).startswith("zh/masks.md: ")
    assert repr(formula[2:-2]) in str(error.value)


def _project(tmp_path: Path, markdown: str, notebook_markdown: str) -> Path:
    """A copy of the site's math setup: this hook and the tooling it calls, arithmatex, mkdocs-jupyter, KaTeX from
    node_modules."""
    (tmp_path / "hooks").mkdir()
    shutil.copy(ROOT / "hooks" / "math.py", tmp_path / "hooks" / "math.py")
    shutil.copytree(ROOT / "docs_tools", tmp_path / "docs_tools", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    docs = tmp_path / "docs"
    (docs / "assets" / "vendor").mkdir(parents=True)
    shutil.copytree(DOCS / "assets" / "vendor" / "katex", docs / "assets" / "vendor" / "katex")
    (docs / "index.md").write_text(markdown, encoding="utf-8")
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": notebook_markdown},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": "cost = '$5 and $6'"},
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (docs / "notebook.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: math\nhooks: [hooks/math.py]\nplugins:\n  - mkdocs-jupyter:\n      include: ['*.ipynb']\n"
        "      custom_mathjax_url: 'data:text/javascript,'\n"
        "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: true\n",
        encoding="utf-8",
    )
    return tmp_path


def _build(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )


GOOD_PAGE = "# Page\n\nInline $a < b$, and `$code$`:\n\n$$\n\\frac{1}{2}\n$$\n"
GOOD_NOTEBOOK = "Inline $x_i$, display $$\\sum_j w_j$$, code `$not math$`."


def test_a_build_typesets_chapter_and_notebook_math(tmp_path: Path) -> None:
    result = _build(_project(tmp_path, GOOD_PAGE, GOOD_NOTEBOOK))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    notebook = (tmp_path / "site" / "notebook" / "index.html").read_text(encoding="utf-8")
    assert page.count('<span class="katex">') == 2
    assert "<code>$code$</code>" in page
    assert 'href="assets/vendor/katex/katex.min.css"' not in page  # the theme here is MkDocs' own, no override
    assert notebook.count('<span class="katex">') == 2
    assert "<code>$not math$</code>" in notebook
    assert "&#39;$5 and $6&#39;" in notebook or "'$5 and $6'" in notebook  # code cells untouched
    assert "x-mathjax-config" not in notebook


@pytest.mark.parametrize(
    ("markdown", "notebook_markdown", "page", "message"),
    [
        (
            GOOD_PAGE + "\nBroken: $\\frac{a$\n",
            GOOD_NOTEBOOK,
            "index.md",
            "KaTeX cannot typeset the formula '\\\\frac{a'",
        ),
        (GOOD_PAGE, GOOD_NOTEBOOK + " Broken: $x^{$", "notebook.ipynb", "KaTeX cannot typeset the formula 'x^{'"),
        # KaTeX parses it, but warns: Chinese outside \text{} is set in the wrong font. --strict fails on it.
        (GOOD_PAGE + "\n$注意力$\n", GOOD_NOTEBOOK, "index.md", "KaTeX warns about the formula '注意力'"),
    ],
    ids=["chapter", "notebook", "warning"],
)
def test_a_planted_bad_formula_fails_the_build_naming_the_page(
    tmp_path: Path, markdown: str, notebook_markdown: str, page: str, message: str
) -> None:
    result = _build(_project(tmp_path, markdown, notebook_markdown))
    assert result.returncode != 0
    assert f"{page}: {message}" in result.stderr, result.stderr[-2000:]


# ---------------------------------------------------------------------------------------------------
# In the browser, with JavaScript off
# ---------------------------------------------------------------------------------------------------
BROWSER_PAGES = [
    (prefix + url, source)
    for prefix, lang in (("", "en"), ("zh/", "zh"))
    for url, source in (
        ("attention-weights/", DOCS / lang / "attention-weights.md"),
        ("notebooks/attention-weights/", DOCS / lang / "notebooks" / "attention-weights.ipynb"),
    )
]

# Text nodes a reader sees outside code and typeset formulas.
VISIBLE_PROSE = """() => {
  const walker = document.createTreeWalker(document.querySelector("article"), NodeFilter.SHOW_TEXT);
  const texts = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.parentElement.closest("pre, code, .katex, script, style")) texts.push(node.data);
  }
  return texts.join(" ");
}"""

LAYOUT = """() => [...document.querySelectorAll(".katex-html")].filter(element => {
  const box = element.getBoundingClientRect();
  return !(box.width > 0 && box.height > 0);
}).length"""

FONTS = """async () => {
  await document.fonts.ready;
  return {
    loaded: [...document.fonts].filter(font => font.status === "loaded").map(font => font.family.replaceAll('"', "")),
    family: getComputedStyle(document.querySelector(".katex")).fontFamily,
  };
}"""


@pytest.fixture(scope="module")
def no_script(uncached_tab):
    """A tab with JavaScript off, that fetches every file anew: what a first visit fetches."""
    return uncached_tab(java_script_enabled=False)


@pytest.mark.parametrize(("url", "source"), BROWSER_PAGES, ids=[url for url, _ in BROWSER_PAGES])
def test_math_shows_typeset_with_javascript_off(no_script, base_url: str, url: str, source: Path) -> None:
    page = no_script
    page.set_viewport_size({"width": 1280, "height": 900})
    fetched = []

    def finished(request) -> None:
        fetched.append(urlsplit(request.url).path)

    page.goto("about:blank")  # what the page before still sends in is read before the count starts
    page.on("requestfinished", finished)
    try:
        page.goto(base_url + url, wait_until="load")
        assert page.evaluate("document.querySelectorAll('script').length") > 0, "the page has scripts, not run"
        assert page.locator(".katex").count() == _source_formulas(source)
        assert page.evaluate(LAYOUT) == 0, "a formula is not laid out"
        fonts = page.evaluate(FONTS)
    finally:
        page.remove_listener("requestfinished", finished)
    assert {"KaTeX_Main", "KaTeX_Math"} <= set(fonts["loaded"]), fonts
    assert fonts["family"].startswith("KaTeX_Main"), fonts
    assert any(path.endswith("/assets/vendor/katex/katex.min.css") for path in fetched)
    assert any(re.search(r"/assets/vendor/katex/fonts/KaTeX_\w+-\w+\.woff2$", path) for path in fetched)
    assert _leftover_tex(page.evaluate(VISIBLE_PROSE)) == []


PHONE_PAGES = [
    (prefix + url, source)
    for prefix, lang in (("", "en"), ("zh/", "zh"))
    for url, source in (
        ("scoring-functions/", DOCS / lang / "scoring-functions.md"),
        ("notebooks/scoring-functions/", DOCS / lang / "notebooks" / "scoring-functions.ipynb"),
    )
]

# Formulas that reach past the screen's edge without a box that scrolls sideways around them (a long display
# formula scrolls inside its own box, an inline formula in a wide table inside the table's), so that the reader
# would have to scroll the page itself.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const inside = box => box.left >= -0.5 && box.right <= width + 0.5;
  const scrolls = element => ["auto", "scroll"].includes(getComputedStyle(element).overflowX);
  return [...document.querySelectorAll("article .arithmatex")].filter(element => {
    if (inside(element.getBoundingClientRect())) return false;
    for (let up = element.parentElement; up !== document.body; up = up.parentElement) {
      if (scrolls(up) && inside(up.getBoundingClientRect())) return false;
    }
    return true;
  }).map(element => element.querySelector("annotation").textContent);
}"""

SCROLLING = """() => [...document.querySelectorAll("article .arithmatex")].filter(element =>
  [element, ...element.querySelectorAll(".katex-display")].some(box =>
    box.scrollWidth > box.clientWidth + 1 && ["auto", "scroll"].includes(getComputedStyle(box).overflowX))).length"""


@pytest.mark.parametrize(("url", "source"), PHONE_PAGES, ids=[url for url, _ in PHONE_PAGES])
def test_long_formulas_scroll_inside_their_box_on_a_phone(no_script, base_url: str, url: str, source: Path) -> None:
    page = no_script
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base_url + url, wait_until="load")
    page.evaluate("document.fonts.ready")
    assert page.evaluate(OVERFLOWING) == []
    # The page has display formulas wider than a phone; they scroll inside their own box.
    assert page.evaluate(SCROLLING) > 0
