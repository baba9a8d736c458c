"""Chinese pages use the glossary's terms: no rendering the glossary page lists as one not to use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_examples import without_code

DOCS = Path(__file__).resolve().parent.parent / "docs"
ZH_PAGES = sorted(path for path in (DOCS / "zh").rglob("*.md") if path.name != "glossary.md")


def glossary(lang: str) -> list[tuple[str, str, list[str]]]:
    """(English term, Chinese term, renderings to avoid) for every row of the glossary's tables."""
    rows = []
    for line in (DOCS / lang / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or set(cells[0]) <= {"-"} or cells[0] in {"English", "英文"}:
            continue
        rows.append((cells[0], cells[1], [word for word in re.split(r"[、,，]\s*", cells[3]) if word]))
    return rows


def _prose(text: str) -> str:
    """A page without its code: fenced blocks, inline code and HTML comments become blank."""
    text = without_code(text)
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def misused_terms(path: Path, rows: list[tuple[str, str, list[str]]]) -> list[str]:
    shown = path.relative_to(DOCS.parent) if path.is_relative_to(DOCS.parent) else path.name
    problems = []
    for number, line in enumerate(_prose(path.read_text(encoding="utf-8")).splitlines(), start=1):
        for english, chinese, avoid in rows:
            for word in avoid:
                if word in line:
                    problems.append(
                        f"{shown}:{number}: “{word}” is not the glossary's rendering of"
                        f" “{english}”: write “{chinese}” (docs/zh/glossary.md)"
                    )
    return problems


def test_both_glossaries_list_the_same_terms() -> None:
    assert glossary("en") == glossary("zh")
    assert len(glossary("zh")) >= 50


@pytest.mark.parametrize("page", ZH_PAGES, ids=[page.relative_to(DOCS).as_posix() for page in ZH_PAGES])
def test_chinese_page_uses_the_glossarys_terms(page: Path) -> None:
    problems = misused_terms(page, glossary("zh"))
    assert not problems, "\n".join(problems)


def test_the_glossary_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# 页面\n\n每个关注分数都来自点积，Transformer 也叫变换器。\n\n```python\n# 关注分数 in code is fine\n```\n"
        "`遮罩` in inline code is fine too.\n",
        encoding="utf-8",
    )
    problems = misused_terms(page, glossary("zh"))
    assert len(problems) == 2
    assert "page.md:3: “关注分数”" in problems[0]
    assert "write “注意力分数”" in problems[0]
    assert "“变换器”" in problems[1]
    assert "write “Transformer”" in problems[1]
