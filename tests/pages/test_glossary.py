"""The glossary page is the single source of terms: both languages list the same ones, and the check
that Chinese pages use them (part of ``python3 dev.py translations check``) finds misuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docs_tools import translation_checks

ROOT = Path(__file__).resolve().parents[2]


def test_both_glossaries_list_the_same_terms() -> None:
    assert translation_checks.glossary(ROOT, "en") == translation_checks.glossary(ROOT, "zh")
    assert len(translation_checks.glossary(ROOT, "zh")) >= 50
    assert translation_checks.glossary_allowances(ROOT, "en") == translation_checks.glossary_allowances(ROOT, "zh")


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
    assert problems[0].what == "“关注分数”不是术语表中“attention score”的译法"
    assert problems[0].fix == "改用术语表（docs/zh/glossary.md）中的术语“注意力分数”。"
    assert "“变换器”" in problems[1].what
    assert "术语“Transformer”" in problems[1].fix


EXPLAINED = "Dropout 是一种正则化方法（《动手学深度学习》译作“暂退法”）。\n"


@pytest.mark.parametrize(
    ("page", "text", "flagged"),
    [
        ("dropout.md", EXPLAINED, []),  # the one mention the glossary allows, beside “Dropout”
        ("masks.md", EXPLAINED, [5]),  # the same sentence on any other page
        ("dropout.md", EXPLAINED + "\n暂退法把元素置零。\n", [7]),  # a second mention
        ("dropout.md", EXPLAINED.replace("暂退法", "暂退法、暂退法"), [5]),  # two on the line
        ("dropout.md", "暂退法把元素置零。\n", [5]),  # a mention that explains nothing
        ("dropout.md", "Dropout（又称随机失活）是一种正则化方法。\n", [5]),  # the dropout row's other word
        ("dropout.md", EXPLAINED.replace("Dropout", "`nn.Dropout`"), [5]),  # the term only in code
    ],
    ids=["allowed", "other-page", "second-mention", "two-on-a-line", "unexplained", "other-word", "term-in-code"],
)
def test_a_mention_the_glossary_allows_stays_on_its_page(
    tmp_path: Path, page: str, text: str, flagged: list[int]
) -> None:
    """The glossary allows 暂退法, d2l-zh's name for Dropout, once on the Dropout page, explained beside
    “Dropout”: the allowance holds on no other page, for no second mention and for no other word."""
    assert translation_checks.glossary_allowances(ROOT, "zh") == {"暂退法": "dropout.md"}
    for locale, body in (("en", "Dropout is a regularization method.\n"), ("zh", text)):
        folder = tmp_path / "docs" / locale
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "docs" / locale / "glossary.md", folder / "glossary.md")
        (folder / page).write_text(f"---\nsource_hash: {'0' * 40}\n---\n\n{body}", encoding="utf-8")
    problems = translation_checks.check_page("zh", page, tmp_path)
    glossary_problems = [problem for problem in problems if "术语表" in problem.what]
    assert [problem.line for problem in glossary_problems] == flagged, "\n".join(map(str, problems))
    assert all(problem.fix == "改用术语表（docs/zh/glossary.md）中的术语“Dropout”。" for problem in glossary_problems)


def test_a_bracket_in_the_last_column_that_the_check_cannot_read_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "docs" / "zh"
    folder.mkdir(parents=True)
    (folder / "glossary.md").write_text(
        "| 英文 | 中文 | 代码中的名称 | 不要写成 |\n|---|---|---|---|\n| dropout | Dropout | | 暂退法（偶尔可以） |\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"docs/zh/glossary.md:3: .*暂退法（偶尔可以）"):
        translation_checks.glossary(tmp_path, "zh")
