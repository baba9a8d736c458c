"""The glossary page is the single source of terms: both languages list the same ones, and the check
that Chinese pages use them (part of ``python3 dev.py translations check``) finds misuses."""

from __future__ import annotations

from pathlib import Path

from docs_tools import translation_checks

ROOT = Path(__file__).resolve().parents[2]


def test_both_glossaries_list_the_same_terms() -> None:
    assert translation_checks.glossary(ROOT, "en") == translation_checks.glossary(ROOT, "zh")
    assert len(translation_checks.glossary(ROOT, "zh")) >= 50


def test_every_glossary_term_has_a_rendering_and_nothing_to_avoid_twice() -> None:
    rows = translation_checks.glossary(ROOT, "zh")
    assert all(english and chinese for english, chinese, _ in rows)
    avoided = [word for _, _, avoid in rows for word in avoid]
    assert len(avoided) == len(set(avoided)), "a rendering to avoid is listed under two terms"
    assert not {chinese for _, chinese, _ in rows} & set(avoided), "a term is both the rendering and one to avoid"


def test_the_glossary_check_can_fail() -> None:
    text = (
        "# 页面\n\n每个关注分数都来自点积，Transformer 也叫变换器。\n\n```python\n# 关注分数 in code is fine\n```\n"
        "`遮罩` in inline code is fine too.\n"
    )
    problems = translation_checks.check_glossary(text, "docs/zh/page.md", "zh", translation_checks.glossary(ROOT, "zh"))
    assert [(problem.path, problem.line) for problem in problems] == [("docs/zh/page.md", 3)] * 2
    assert problems[0].what == "“关注分数” is not the glossary's rendering of “attention score”"
    assert problems[0].fix == "Write “注意力分数”, the term of the glossary (docs/zh/glossary.md)."
    assert "“变换器”" in problems[1].what
    assert "Write “Transformer”" in problems[1].fix
