"""Library code on the pages (hooks/library_code.py): a section of the library, dedented, without docstrings
or what only a type checker reads."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from docs_tools import config as site_config
from docs_tools import records
from docs_tools.pages import INCLUDE, library_code, library_section
from docs_tools.project import DOCS, ROOT
from hooks import library_code as hook

MODULE = '''"""Module docstring."""

import torch


# --8<-- [start:Tiny]
class Tiny(torch.nn.Module):
    """A class docstring,
    on two lines."""

    size: int

    def forward(self, x):
        """A method docstring."""

        return x  # the body, right under the def line


def helper(x):
    """Helper."""
    return x
# --8<-- [end:Tiny]
'''


def test_a_section_shows_its_code_without_docstrings_with_the_lines_it_came_from(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text(MODULE, encoding="utf-8")
    path, section = library_section('--8<-- "lib.py:Tiny"', tmp_path)
    assert path == tmp_path / "lib.py"
    assert section == [
        (7, "class Tiny(torch.nn.Module):"),
        (10, ""),
        (11, "    size: int"),
        (12, ""),
        (13, "    def forward(self, x):"),
        (16, "        return x  # the body, right under the def line"),
        (17, ""),
        (18, ""),
        (19, "def helper(x):"),
        (21, "    return x"),
    ]


TYPED = """from typing import TYPE_CHECKING, overload
import typing


# --8<-- [start:Typed]
class Typed:
    size = 1

    # For type checkers: one signature per flag.
    @overload
    def forward(self, x: int, flag: bool = False) -> int: ...

    @typing.overload
    def forward(self, x: str, flag: bool = False) -> str: ...

    def forward(self, x, flag=False):
        return x

    if TYPE_CHECKING:
        # What the checker reads.
        __call__ = forward

    def after(self):  # a comment that belongs to the code
        return 0
# --8<-- [end:Typed]
"""


def test_a_section_leaves_out_what_only_a_type_checker_reads(tmp_path: Path) -> None:
    """The ``@overload`` signatures and an ``if TYPE_CHECKING:`` block, with the comments that introduce them:
    the page shows the code that runs, the API reference the signatures."""
    (tmp_path / "lib.py").write_text(TYPED, encoding="utf-8")
    assert library_code('--8<-- "lib.py:Typed"', tmp_path) == (
        "class Typed:\n"
        "    size = 1\n"
        "\n"
        "    def forward(self, x, flag=False):\n"
        "        return x\n"
        "\n"
        "    def after(self):  # a comment that belongs to the code\n"
        "        return 0"
    )


def test_a_missing_file_or_section_is_named(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text(MODULE, encoding="utf-8")
    with pytest.raises(ValueError, match=r"there is no file nope\.py"):
        library_section('--8<-- "nope.py:Tiny"', tmp_path)
    with pytest.raises(ValueError, match=r"lib.py needs one '# --8<-- \[start:Other\]' line"):
        library_section('--8<-- "lib.py:Other"', tmp_path)


def test_the_hook_expands_an_include_keeping_its_indent_and_names_the_page_of_a_broken_one() -> None:
    page = SimpleNamespace(file=SimpleNamespace(src_uri="en/masks.md"))
    include = '--8<-- "attention_lib/causal.py:CausalAttention"'
    markdown = f"!!! note\n    ```python\n    {include}\n    ```\n"
    expanded = hook.on_page_markdown(markdown, page, None, None)
    body = expanded.split("\n")[2:-2]
    assert body[0] == "    class CausalAttention(nn.Module):"
    assert all(line.startswith("    ") or not line for line in body)
    assert "\n".join(line[4:] for line in body) == library_code(include, ROOT)
    with pytest.raises(PluginError, match=r"en/masks.md: .*there is no file attention_lib/gone.py"):
        hook.on_page_markdown('```python\n--8<-- "attention_lib/gone.py:X"\n```\n', page, None, None)


def test_the_hook_marks_library_source_links_its_lines_and_leaves_no_copy_button() -> None:
    """The built block has Material's title, the file's path linked to the lines shown, the note in the page's
    language, and the ``no-copy`` class, so that Material gives it no copy button (tests/site/test_browser.py
    checks the pages in the browser)."""
    import markdown

    page = SimpleNamespace(file=SimpleNamespace(src_uri="zh/masks.md"))
    include = '--8<-- "attention_lib/causal.py:CausalAttention"'
    expanded = hook.on_page_markdown(f"```python\n{include}\n```\n", page, None, None)
    renderer = markdown.Markdown(
        extensions=["attr_list", "pymdownx.highlight", "pymdownx.superfences"],
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )
    words = {"note": "库的源码", "link_title": "{path}: {first}-{last}"}
    config = SimpleNamespace(extra={"library_source": words, "repository": "https://github.com/o/r/"})
    html = hook.on_page_content(renderer.convert(expanded), page, config, None)
    shown = [number for number, text in library_section(include, ROOT)[1] if text.strip()]
    first, last = shown[0], shown[-1]
    assert html.startswith('<div class="language-python no-copy library-source highlight"')
    assert (
        f'<span class="filename"><a href="https://github.com/o/r/blob/main/attention_lib/causal.py#L{first}-L{last}"'
        f' title="attention_lib/causal.py: {first}-{last}">attention_lib/causal.py</a>'
        ' <span class="library-source__note">库的源码</span></span><pre>'
    ) in html
    lines = (ROOT / "attention_lib" / "causal.py").read_text(encoding="utf-8").splitlines()
    assert lines[first - 1].strip() == "class CausalAttention(nn.Module):"
    # A block the hook did not title (another Markdown extension's, say) fails the build rather than show untitled.
    untitled = '<div class="language-python no-copy library-source highlight"><pre><code>x</code></pre></div>'
    with pytest.raises(PluginError, match=r"zh/masks.md: 1 blocks of library source, but 0 of them"):
        hook.on_page_content(untitled, page, config, None)


def test_an_include_is_the_only_line_of_its_block() -> None:
    """An include beside other code would show library source in a block that also runs, or runs as pasted."""
    page = SimpleNamespace(file=SimpleNamespace(src_uri="en/masks.md"))
    mixed = '# A\n\n```python\nx = 1\n--8<-- "attention_lib/causal.py:CausalAttention"\n```\n'
    with pytest.raises(PluginError, match=r"en/masks.md:5: --8<-- .* must be the only line of its ```python block"):
        hook.on_page_markdown(mixed, page, None, None)


INCLUDES = sorted(
    {
        line.strip()
        for lang in site_config.complete_locales()
        for source in records.pages()
        for line in (DOCS / lang / source).read_text(encoding="utf-8").splitlines()
        if INCLUDE.match(line)
    }
)


@pytest.mark.parametrize("include", INCLUDES)
def test_every_included_section_is_code_only(include: str) -> None:
    code = library_code(include, ROOT)
    assert code.startswith(("class ", "def ")), code[:80]
    assert '"""' not in code
    assert "[`" not in code  # the API reference's cross-reference markup stays in the docstrings
    assert "@overload" not in code
    assert "TYPE_CHECKING" not in code
