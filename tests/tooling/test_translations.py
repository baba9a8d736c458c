"""The translation workflow: freshness records, the structure checks and what they say, and the pull-request
notice. What the built site shows, and the translator's path on a copy of the project, are in the site layer
(tests/site/test_translations_built.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import records, translation_checks, translations
from docs_tools.pages import without_code

ROOT = Path(__file__).resolve().parents[2]

LOCALES = [language.locale for language in site_config.languages()]
PAGES = records.pages()


# ---------------------------------------------------------------------------------------------------
# The real pages pass every check
# ---------------------------------------------------------------------------------------------------


def test_zh_is_configured_and_complete() -> None:
    assert [(language.locale, language.complete) for language in site_config.languages()] == [("zh", True)]
    assert len(PAGES) >= 17


def test_every_page_exists_in_every_complete_language() -> None:
    problems = translation_checks.check_pages_exist()
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize("page", [f"{locale}/{page}" for locale in LOCALES for page in PAGES])
def test_translation_passes_the_structure_checks(page: str) -> None:
    """Same heading ids, code, outputs, links and images as the English page; nothing left in English;
    the glossary's terms; a freshness record."""
    problems = translation_checks.check_page(*page.split("/", 1))
    assert not problems, "\n".join(map(str, problems))


#: Every Markdown file written in Chinese: the pages, and the READMEs and guides beside the English ones.
CHINESE_MARKDOWN = sorted((ROOT / "docs" / "zh").rglob("*.md")) + sorted(ROOT.glob("*.zh-CN.md"))


@pytest.mark.parametrize("path", CHINESE_MARKDOWN, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_no_chinese_line_is_hard_wrapped(path: Path) -> None:
    """GUIDE: no hard-wrapped Chinese lines. A line break inside a paragraph shows as a space: between two
    Chinese characters or beside full-width punctuation, a stray gap in the sentence."""
    problems = _hard_wrapped(path, ROOT)
    assert not problems, "\n".join(map(str, problems))


def _hard_wrapped(path: Path, root: Path) -> list[translation_checks.Problem]:
    """What the test above finds in one file."""
    text = path.read_text(encoding="utf-8")
    return translation_checks.check_line_breaks(text, path.relative_to(root).as_posix())


def test_a_hard_wrapped_paragraph_planted_in_a_file_is_caught(tmp_path: Path) -> None:
    """The check above, on a file with a Chinese paragraph, a list item and an admonition each broken across
    lines, beside the same text written correctly: each break is named by file and line, with the fix."""
    page = tmp_path / "docs" / "zh" / "page.md"
    page.parent.mkdir(parents=True)
    page.write_text(
        "---\nsource_sections: {}\n---\n\n# 标题 { #title }\n\n"
        "正确的段落写在一行里。\n\n"
        "第一句话写到这里\n断开了。\n\n"  # lines 9-10
        "- 列表项写到这里\n  断开了。\n\n"  # lines 12-13
        '!!! note "注意"\n    提示写到这里\n    断开了。\n\n'  # lines 16-17
        "```python\n# 代码块里的注释\n# 可以分行\n```\n",
        encoding="utf-8",
    )
    problems = _hard_wrapped(page, tmp_path)
    assert [problem.line for problem in problems] == [9, 12, 16]
    assert str(problems[0]).startswith("docs/zh/page.md:9: 一个中文段落在第 9 行和第 10 行之间断开了")
    assert "断开处在句子中会显示成多余的空格" in problems[0].what
    assert problems[0].fix == "把这两行合成一行：每个中文段落或列表项都写在一行里。"
    joined = re.sub(r"这里\n *断开了", "这里断开了", page.read_text(encoding="utf-8"))
    assert joined.count("这里断开了") == 3
    page.write_text(joined, encoding="utf-8")
    assert _hard_wrapped(page, tmp_path) == []


def test_chinese_markdown_includes_the_readme_and_the_guide() -> None:
    names = {path.name for path in CHINESE_MARKDOWN}
    assert {"README.zh-CN.md", "CONTRIBUTING.zh-CN.md", "index.md", "glossary.md"} <= names


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("第一行\n第二行\n", [1]),  # two Chinese characters
        ("它打印的内容，\n  其他任何差异\n", [1]),  # a list item's continuation line
        ("名字：`batch`（批量）、\n`num_tokens`\n", [1]),  # beside full-width punctuation
        ("见[注意力权重](attention-weights.md)\n**一节**\n", [1]),  # link text, emphasis
        ("> 引用的第一行\n> 第二行\n", [1]),  # a quote
        ("测试结果与\nPyTorch 一致\n", [1]),  # shows as the space the style wants, but still hard-wrapped
        ("用 `view`\n拆分\n", [1]),
        ("in English\nand more English\n", []),
        ("# 标题\n正文\n", []),  # a heading is a block of its own
        ("- 第一项\n- 第二项\n", []),
        ("| 英文 | 中文 |\n|---|---|\n", []),
        ('!!! note "注意"\n    正文\n', []),
        ("第一段\n\n第二段\n", []),
        ("```python\n# 注释\n# 注释\n```\n", []),  # code is not prose
        ("<!-- 注释\n注释 -->\n", []),
        ('!!! note "注意"\n    第一行\n    第二行\n', [2]),  # an admonition's body, indented by 4 spaces
        ("!!! note\n\n    第一行\n    第二行\n", [3]),
        ("1. 第一项\n   续行\n", [1]),  # a numbered item's continuation line
        ("- 第一项\n\n    续段第一行\n    续段第二行\n", [3]),  # a second paragraph inside a list item
        ("- 甲\n  - 乙\n", []),  # a nested item is a block of its own
        ("!!! note\n\n    ```python\n    # 注释\n    # 注释\n    ```\n", []),  # code inside an admonition
        ("---\ntitle: 标题\n说明: 甲\n---\n\n正文\n", []),  # front matter is not prose
        ("---\ntitle: 标题\n---\n\n正文\n接着\n", [5]),  # but the line numbers stay the file's
        ("第一行\r\n第二行\r\n", [1]),  # a Windows checkout
        ("![图一](a.svg#only-light){ .x }\n![图一](a-dark.svg#only-dark){ .x }\n", []),  # a figure's two palettes
        ("![图一](a.svg)\n说明\n", [1]),  # but not an image and a sentence
        ("![w[0:2] 的图](a.svg#only-light)\n![w[0:2] 的图](a-dark.svg#only-dark)\n", []),  # brackets in the alt
    ],
)
def test_the_line_break_check_can_fail(text: str, flagged: list[int]) -> None:
    assert [problem.line for problem in translation_checks.check_line_breaks(text, "x.md")] == flagged


# ---------------------------------------------------------------------------------------------------
# Freshness records
# ---------------------------------------------------------------------------------------------------


def test_the_messages_record_is_the_git_blob_id(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    english = ROOT / records.MESSAGES_FOLDER / "en.toml"
    hashed = subprocess.run(["git", "hash-object", str(english)], capture_output=True, text=True, check=True)
    assert records.source_hash(english.read_text(encoding="utf-8")) == hashed.stdout.strip()
    # A Windows checkout with CRLF line endings records the same version.
    assert records.source_hash("a\r\nb\r\n") == records.source_hash("a\nb\n")


PAGE_WITH_SECTIONS = """\
Text before the title belongs to the opening section.

# Masks { #masks }

Opening paragraph.

## Causal masks { #causal }

```python
# A comment, not a heading { #not-a-section }
print(1)
```

### Counting { #counting }

Counted.

## Two words { #yes }

## No id here
"""


def test_a_page_is_cut_into_sections_at_its_headings_outside_code() -> None:
    found = records.sections(PAGE_WITH_SECTIONS)
    assert [(s.id, s.title, s.line) for s in found] == [
        ("", "", 1),
        ("masks", "Masks", 3),
        ("causal", "Causal masks", 7),
        ("counting", "Counting", 14),
        ("yes", "Two words", 18),
        ("No id here", "No id here", 20),
    ]
    assert found[2].text.startswith("## Causal masks { #causal }\n\n```python\n# A comment")
    assert found[2].text.endswith("```\n")
    # Line numbers are the file's, front matter included; the front matter is no section's text.
    front = '---\nsource_sections:\n  "masks": "abc"\n---\n\n'
    shifted = records.sections(front + PAGE_WITH_SECTIONS)
    assert [s.line for s in shifted] == [1, 8, 12, 19, 23, 25]
    assert [s.hash for s in shifted] == [s.hash for s in found]
    # The hash ignores line endings and trailing spaces, and nothing else.
    assert records.text_hash("a  \r\nb\n\n") == records.text_hash("a\nb")
    assert records.text_hash("a\nb") != records.text_hash("a\nB")
    assert records.text_hash("a\nb") != records.text_hash("a\n\nb")


def test_writing_the_record_keeps_the_page_and_its_other_front_matter() -> None:
    page = "# 掩码 { #masks }\n\n正文。\n"
    # Ids and hashes that YAML would read as booleans, numbers or null stay strings.
    value = {"masks": "0123456789ab", "yes": "1e5000000000", "null": "000000000012", "on": "abcdef012345"}
    recorded = records.with_front_matter(page, records.SECTIONS_KEY, value)
    assert recorded.startswith('---\nsource_sections:\n  "masks": "0123456789ab"\n')
    assert recorded.endswith("---\n\n" + page)
    assert records.read_sections(recorded) == value
    again = records.with_front_matter(recorded, records.SECTIONS_KEY, {"masks": "b" * 12})
    assert records.read_sections(again) == {"masks": "b" * 12}
    assert again.count("source_sections") == 1
    assert again.endswith(page)
    other = "---\ntitle: x\nhide:\n  - toc\n---\n\n" + page
    both = records.with_front_matter(other, records.SECTIONS_KEY, {"masks": "c" * 12})
    assert records.front_matter(both) == {"source_sections": {"masks": "c" * 12}, "title": "x", "hide": ["toc"]}
    reviewed = records.with_front_matter(both, records.REVIEWED_KEY, {"by": "li-wei", "translation": "d" * 12})
    assert records.read_review(reviewed) == {"by": "li-wei", "translation": "d" * 12}
    assert records.read_sections(reviewed) == {"masks": "c" * 12}
    assert records.with_front_matter(records.with_front_matter(page, "reviewed", {"by": "x"}), "reviewed", None) == page
    assert records.read_sections(page) is None
    # The record is not content: line numbers in messages stay those of the file.
    title = recorded.splitlines().index("# 掩码 { #masks }")
    assert records.without_front_matter(recorded).splitlines()[title] == "# 掩码 { #masks }"
    assert records.translated_text(reviewed) == page


def _project(root: Path, en: dict[str, str], zh: dict[str, str], complete: str = "[zh]") -> Path:
    """A minimal project: mkdocs.yml with English and Chinese, and the given pages."""
    (root / "mkdocs.yml").write_text(
        "plugins:\n  - i18n:\n      languages:\n"
        "        - locale: en\n          name: English\n          default: true\n"
        "        - locale: zh\n          name: 简体中文\n"
        f"extra:\n  complete_languages: {complete}\n",
        encoding="utf-8",
    )
    for locale, files in (("en", en), ("zh", zh)):
        for name, text in files.items():
            path = root / "docs" / locale / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return root


def test_state_follows_the_english_page_section_by_section(tmp_path: Path) -> None:
    english = "# A { #a }\n\nIntro.\n\n## One { #one }\n\nFirst.\n\n## Two { #two }\n\nSecond.\n"
    chinese = "# 甲 { #a }\n\n引言。\n\n## 一 { #one }\n\n第一。\n\n## 二 { #two }\n\n第二。\n"
    root = _project(tmp_path, {"a.md": english, "b.md": "# B { #b }\n"}, {"a.md": chinese})
    docs = root / "docs"
    assert records.state("zh", "a.md", docs) == records.OUTDATED  # no record yet
    assert translations.update(["zh/a.md"], root) == 0
    assert records.statuses(root) == {"a.md": {"zh": "up to date"}, "b.md": {"zh": "missing"}}
    assert records.page_state("zh", "a.md", docs).current == 3

    # One English section changes: that section alone is outdated.
    (docs / "en" / "a.md").write_text(english.replace("First.", "First, changed."), encoding="utf-8")
    state = records.page_state("zh", "a.md", docs)
    assert (state.state, [s.id for s in state.outdated], state.current, len(state.sections)) == (
        records.OUTDATED, ["one"], 2, 3,
    )  # fmt: skip
    # A new English section is outdated until recorded; a section English dropped keeps the page outdated.
    (docs / "en" / "a.md").write_text(english + "\n## Three { #three }\n\nThird.\n", encoding="utf-8")
    assert [s.id for s in records.page_state("zh", "a.md", docs).outdated] == ["three"]
    (docs / "en" / "a.md").write_text(english.replace("## Two { #two }\n\nSecond.\n", ""), encoding="utf-8")
    state = records.page_state("zh", "a.md", docs)
    assert (state.state, state.outdated, state.removed) == (records.OUTDATED, [], ["two"])
    # Only the English text counts: editing the translation does not make a section current or outdated.
    (docs / "en" / "a.md").write_text(english, encoding="utf-8")
    (docs / "zh" / "a.md").write_text((docs / "zh" / "a.md").read_text("utf-8") + "\n又一句。\n", encoding="utf-8")
    assert records.state("zh", "a.md", docs) == records.UP_TO_DATE


# ---------------------------------------------------------------------------------------------------
# Each structure check fails, and says where and how to fix it
# ---------------------------------------------------------------------------------------------------

ENGLISH = """\
# Masks { #masks }

A mask hides some positions from each query; see [weights](attention-weights.md#softmax).

![The causal mask](../assets/figures/causal.svg)

## Causal masks { #causal }

```python
import torch

mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)  # (3, 3)
print(mask.sum())
```

```output
tensor(3)
```
"""

CHINESE = """\
---
source_sections: {"masks": "000000000000"}
---

# 掩码 { #masks }

掩码让每个查询看不到某些位置，参见[注意力权重](attention-weights.md#softmax)。

![因果掩码](../assets/figures/causal.svg)

## 因果掩码 { #causal }

```python
import torch

mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)  # 形状 (3, 3)
print(mask.sum())
```

```output
tensor(3)
```
"""


PLACEHOLDER_RECORD = 'source_sections: {"masks": "000000000000"}'


def _current(chinese: str, english: str) -> str:
    """``chinese`` with a record of every section of ``english`` as it is: an up-to-date translation, whose
    every section the checks compare (one line, as the placeholder's, so that line numbers stay)."""
    record = ", ".join(f'"{s.id}": "{s.hash}"' for s in records.sections(english))
    return chinese.replace(PLACEHOLDER_RECORD, "source_sections: {" + record + "}")


def _problems(tmp_path: Path, chinese: str, english: str = ENGLISH) -> list[translation_checks.Problem]:
    root = _project(tmp_path, {"masks.md": english}, {"masks.md": _current(chinese, english)})
    return translation_checks.check_page("zh", "masks.md", root)


def test_a_faithful_translation_passes(tmp_path: Path) -> None:
    # Translated comments, prose, heading text, link text and alt text are all fine.
    assert _problems(tmp_path, CHINESE) == []


def test_a_missing_record_is_reported(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, CHINESE.split("---\n\n", 1)[1])
    assert (problem.path, problem.line) == ("docs/zh/masks.md", 1)
    assert "版本记录" in problem.what
    assert "python3 dev.py translations update zh/masks.md" in problem.fix


def test_a_translated_heading_id_is_reported(tmp_path: Path) -> None:
    problems = _problems(tmp_path, CHINESE.replace("{ #causal }", "{ #yinguo }"))
    assert [str(problem).splitlines()[0] for problem in problems] == [
        "docs/zh/masks.md:11: 英文页面的标题 '## Causal masks { #causal }'（docs/en/masks.md:7，id 'causal'）"
        "在此页面中没有对应的标题",
        "docs/zh/masks.md:11: 标题 '## 因果掩码 { #yinguo }' 的 id 是 'yinguo'，而英文页面（docs/en/masks.md）"
        "在这个位置上没有带这个 id 的标题",
    ]
    assert "标题 id 永远不翻译" in problems[0].fix


def test_changed_code_is_reported_with_both_lines(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, CHINESE.replace("diagonal=1)  # 形状", "diagonal=2)  # 形状"))
    assert (problem.path, problem.line) == ("docs/zh/masks.md", 16)
    assert "（docs/en/masks.md:12）不同：这里是 `2`，英文页面是 `1`" in problem.what
    assert "只有 # 注释可以翻译" in problem.fix


def test_a_changed_output_is_reported(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, CHINESE.replace("tensor(3)", "tensor(4)"))
    assert problem.line == 21
    assert "这个 ```output 块与英文页面（docs/en/masks.md:17）不同" in problem.what


def test_a_missing_block_is_reported(tmp_path: Path) -> None:
    without_output = CHINESE.replace("\n```output\ntensor(3)\n```\n", "")
    (problem,) = _problems(tmp_path, without_output)
    assert "英文页面有 2 个代码块和输出块，此页面只有 1 个" in problem.what
    assert "docs/en/masks.md:16" in problem.what


def test_a_changed_or_dropped_link_or_image_is_reported(tmp_path: Path) -> None:
    chinese = CHINESE.replace("attention-weights.md#softmax", "attention-weights.md#normalize")
    chinese = chinese.replace("![因果掩码](../assets/figures/causal.svg)\n", "")
    problems = [str(problem).splitlines()[0] for problem in _problems(tmp_path, chinese)]
    assert problems == [
        "docs/zh/masks.md:5: 英文页面有链接 attention-weights.md#softmax（docs/en/masks.md:3），此页面没有",
        "docs/zh/masks.md:5: 英文页面有图片 ../assets/figures/causal.svg（docs/en/masks.md:5），此页面没有",
        "docs/zh/masks.md:7: 此页面有链接 attention-weights.md#normalize，而英文页面（docs/en/masks.md）没有",
    ]


def test_a_link_whose_text_wraps_onto_the_next_line_is_a_link(tmp_path: Path) -> None:
    """An English paragraph wrapped at ~104 columns may break a link's text; Markdown renders it as one link, so a
    translation that drops it is reported, and one that keeps it is not reported as adding one."""
    english = ENGLISH + "\nThis page is for a reader who has built the [KV\ncache](kv-cache.md) already.\n"
    kept = CHINESE + "\n本页写给已经实现过 [KV 缓存](kv-cache.md) 的读者。\n"
    dropped = CHINESE + "\n本页写给已经实现过 KV 缓存的读者。\n"
    assert _problems(tmp_path, kept, english) == []
    (problem,) = _problems(tmp_path, dropped, english)
    assert "英文页面有链接 kv-cache.md" in problem.what
    # A blank line ends a paragraph, and a bracket left open there is no link.
    assert _problems(tmp_path, CHINESE, ENGLISH + "\nSee [the\n\ncache](kv-cache.md).\n") == []


def test_a_link_to_a_files_own_translation_counts_as_the_same_link(tmp_path: Path) -> None:
    english = ENGLISH + "\nSee [CONTRIBUTING](https://example.org/CONTRIBUTING.md).\n"
    chinese = CHINESE + "\n参见[贡献指南](https://example.org/CONTRIBUTING.zh-CN.md)。\n"
    assert _problems(tmp_path, chinese, english) == []


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("A mask hides some positions from each query in the sequence.", True),  # a whole English sentence
        ("掩码让查询看不到某些位置, because the model must not see the future.", True),  # half translated
        ("这句话是“Your journey starts with one step”的嵌入。", False),  # a quoted example sentence
        ("见《从零构建大模型》（*Build a Large Language Model (From Scratch)*）第 3 章。", False),  # a title
        ("调用 `torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)` 即可。", False),
        ("每个 Transformer 都用 PyTorch 的 softmax 和 Dropout。", False),  # names and terms kept in English
        ("公式是 $\\mathrm{softmax}(q k^T / \\sqrt{d_k}) v$ of the values here。", False),  # math
        ("[a link text in English that is long](masks.md)", True),  # link text is translated too
    ],
)
def test_untranslated_english_is_found(tmp_path: Path, line: str, flagged: bool) -> None:
    problems = _problems(tmp_path, CHINESE + "\n" + line + "\n", ENGLISH + "\n[The masks page](masks.md) shows more.\n")
    found = [problem for problem in problems if "未翻译的英文" in problem.what]
    assert bool(found) is flagged, problems
    if flagged:
        assert found[0].line == CHINESE.count("\n") + 2
        assert "翻译它" in found[0].fix


def test_a_line_kept_as_in_english_is_found_in_any_language(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, CHINESE.replace("## 因果掩码 { #causal }", "## Causal masks { #causal }"))
    assert (problem.line, problem.what) == (11, "这一行与英文页面中的一行相同：'Causal masks'")


def test_pages_missing_in_a_complete_language_are_reported(tmp_path: Path) -> None:
    root = _project(
        tmp_path, {"a.md": "# A { #a }\n", "b.md": "# B { #b }\n"}, {"a.md": "# 甲 { #a }\n", "c.md": "# 丙\n"}
    )
    problems = translation_checks.check_pages_exist(root)
    assert [(problem.path, problem.what) for problem in problems] == [
        ("docs/zh/b.md", "docs/en/b.md 还没有简体中文译文"),
        ("docs/zh/c.md", "没有与此页面对应的英文页面 docs/en/c.md"),
    ]
    # A language still being added may miss pages; they show in English with a banner.
    root = _project(tmp_path, {"a.md": "# A { #a }\n", "b.md": "# B { #b }\n"}, {"a.md": "# 甲 { #a }\n"}, "[]")
    (tmp_path / "docs" / "zh" / "c.md").unlink()
    assert translation_checks.check_pages_exist(root) == []


def test_update_refuses_a_page_that_fails_its_checks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = _project(tmp_path, {"masks.md": ENGLISH}, {"masks.md": CHINESE.replace("tensor(3)", "tensor(4)")})
    assert translations.update(["zh/masks.md"], root) == 1
    out = capsys.readouterr().out
    assert "docs/zh/masks.md:21:" in out
    assert "未记录：请先修复 docs/zh/masks.md 中上面列出的 1 个问题。" in out
    assert records.read_sections((root / "docs" / "zh" / "masks.md").read_text(encoding="utf-8")) == {"masks": "0" * 12}


# ---------------------------------------------------------------------------------------------------
# The pull-request notice and the diff, in a Git repository
# ---------------------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> str:
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.org", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _project(tmp_path, {"masks.md": ENGLISH, "other.md": "# Other { #other }\n"}, {"masks.md": CHINESE})
    (root / "docs" / "zh" / "other.md").write_text("# 其他 { #other }\n", encoding="utf-8")
    assert translations.update(["zh/masks.md", "zh/other.md"], root) == 0
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "base")
    return root


SEES = "Each query sees itself and the tokens before it.\n\n"
SEES_ZH = "每个查询只能看到它自己和它之前的词元。\n\n"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_contributors_pull_request_section_by_section(
    repository: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path_factory
) -> None:
    """An English section edited -> that section (only) listed as outdated, with its English diff, by the
    status command and on the pull request -> the Chinese updated -> current again."""
    summary = tmp_path_factory.mktemp("summary") / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    english, chinese = repository / "docs" / "en" / "masks.md", repository / "docs" / "zh" / "masks.md"

    # 1. A writer adds a sentence to the section "causal" of the English page.
    _edit(english, "## Causal masks { #causal }\n\n", "## Causal masks { #causal }\n\n" + SEES)
    _edit(repository / "docs" / "zh" / "other.md", "其他", "其他页面")  # a translation-only change: no notice
    _git(repository, "commit", "-q", "-am", "Masks: say what a query sees")

    # 2. The pull request: one notice naming the section, and the job summary with its diff.
    capsys.readouterr()
    assert translations.main(["status", "--github-base", "HEAD~1"], repository) == 0  # never a failure
    (notice,) = capsys.readouterr().out.splitlines()
    assert notice.startswith(
        "::notice file=docs/zh/masks.md,title=Translation now outdated::This pull request changes"
        " docs/en/masks.md, so 1 section(s) of its 简体中文 translation docs/zh/masks.md are outdated (#causal);"
    )
    written = summary.read_text(encoding="utf-8")
    assert "#### docs/zh/masks.md (简体中文): 1 section(s)" in written
    assert "<details><summary>#causal: Causal masks</summary>" in written
    assert "\n+Each query sees itself and the tokens before it.\n" in written
    assert "#masks" not in written  # the opening section did not change
    # The section holds a code block: the diff is fenced with more backticks than it contains.
    assert "\n````diff\n" in written
    assert "\n ```python\n" in written

    # 3. The translator's view: the status lists the section and shows its diff; diff shows one section.
    translations.main([], repository)
    status = capsys.readouterr().out
    assert re.search(r"^masks\.md +outdated 1/2 ", status, re.MULTILINE)
    assert re.search(r"^other\.md +up to date 1/1 ", status, re.MULTILINE)
    assert "zh/masks.md：待更新的小节：#causal\n" in status
    assert "    +Each query sees itself and the tokens before it.\n" in status
    assert translations.main(["diff", "zh/masks.md#causal"], repository) == 0
    diff = capsys.readouterr().out
    assert "--- docs/en/masks.md#causal（翻译时）\n+++ docs/en/masks.md#causal（现在）\n" in diff
    assert "\n+Each query sees itself and the tokens before it.\n" in diff
    assert "Masks { #masks }" not in diff
    assert translations.main(["diff", "zh/masks.md#masks"], repository) == 0
    assert "docs/zh/masks.md 的小节 'masks' 已是最新" in capsys.readouterr().out
    assert translations.main(["diff", "zh/masks.md#nowhere"], repository) == 1
    assert "docs/en/masks.md 没有小节 'nowhere'。它的小节有：masks、causal" in capsys.readouterr().out

    # 4. The translator translates the sentence and records the page: current again, no notice left.
    _edit(chinese, "## 因果掩码 { #causal }\n\n", "## 因果掩码 { #causal }\n\n" + SEES_ZH)
    assert translations.main(["update", "zh/masks.md"], repository) == 0
    assert "docs/zh/masks.md 现已记录 docs/en/masks.md 的全部小节：已是最新。" in capsys.readouterr().out
    assert records.page_state("zh", "masks.md", repository / "docs").current == 2
    _git(repository, "commit", "-q", "-am", "Masks: translate what a query sees")
    summary.write_text("", encoding="utf-8")
    assert translations.main(["status", "--github-base", "HEAD~2"], repository) == 0
    assert capsys.readouterr().out == "No translation became outdated.\n"
    assert summary.read_text(encoding="utf-8") == "### Translations\n\nNo translation became outdated.\n"


def test_a_typo_fix_marked_as_needing_no_translation_leaves_every_section_current(
    repository: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path_factory
) -> None:
    summary = tmp_path_factory.mktemp("summary") / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    english, chinese = repository / "docs" / "en" / "masks.md", repository / "docs" / "zh" / "masks.md"
    body = records.translated_text(chinese.read_text(encoding="utf-8"))

    # A typo fixed in the opening section, marked before committing: the record moves, the Chinese does not.
    _edit(english, "A mask hides some positions from each query", "A mask hides some positions from every query")
    assert records.state("zh", "masks.md", repository / "docs") == records.OUTDATED
    capsys.readouterr()
    assert translations.main(["no-translation-needed", "docs/en/masks.md"], repository) == 0
    assert capsys.readouterr().out == "docs/zh/masks.md: #masks still current (this change needs no translation).\n"
    assert records.state("zh", "masks.md", repository / "docs") == records.UP_TO_DATE
    assert records.translated_text(chinese.read_text(encoding="utf-8")) == body
    _git(repository, "commit", "-q", "-am", "Masks: typo")
    assert translations.main(["status", "--github-base", "HEAD~1"], repository) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "::notice file=docs/zh/masks.md,title=No translation needed::This pull request changes #masks in English"
        " and records that the 简体中文 translation needs no change there.",
        "No translation became outdated.",
    ]
    written = summary.read_text("utf-8")
    assert "### Marked as needing no translation\n" in written
    assert "#### docs/zh/masks.md (简体中文)\n\n<details><summary>#masks: Masks</summary>" in written
    # The reviewer sees the change that was marked.
    assert "-A mask hides some positions from each query" in written
    assert "+A mask hides some positions from every query" in written

    # Nothing to mark once committed, unless the commit before the change is named.
    assert translations.main(["no-translation-needed", "en/masks.md"], repository) == 1
    assert "no section differs from HEAD" in capsys.readouterr().out

    # The mark never hides a real change: a section outdated before the typo fix stays outdated.
    _edit(english, "## Causal masks { #causal }\n\n", "## Causal masks { #causal }\n\n" + SEES)
    _git(repository, "commit", "-q", "-am", "Masks: say what a query sees")
    _edit(english, "tokens before it", "tokens before them")
    assert translations.main(["no-translation-needed", "en/masks.md#causal"], repository) == 0
    out = capsys.readouterr().out
    assert out == "docs/zh/masks.md: #causal outdated before this change already: left for a translator.\n"
    assert [s.id for s in records.page_state("zh", "masks.md", repository / "docs").outdated] == ["causal"]
    # ... and since names the commit before the writer's change, when it is already committed.
    _git(repository, "checkout", "-q", "--", "docs/en/masks.md")
    assert translations.main(["no-translation-needed", "en/masks.md", "--since", "HEAD~1"], repository) == 0
    assert "#causal still current" in capsys.readouterr().out


def test_one_section_recorded_alone_and_a_second_persons_review(repository: Path, capsys) -> None:
    english, chinese = repository / "docs" / "en" / "masks.md", repository / "docs" / "zh" / "masks.md"
    docs = repository / "docs"
    _edit(english, "## Causal masks { #causal }\n\n", "## Causal masks { #causal }\n\n" + SEES)
    _edit(english, "see [weights]", "see [the weights]")
    assert [s.id for s in records.page_state("zh", "masks.md", docs).outdated] == ["masks", "causal"]

    # The translator translates one section and records it alone; the other stays outdated.
    _edit(chinese, "## 因果掩码 { #causal }\n\n", "## 因果掩码 { #causal }\n\n" + SEES_ZH)
    capsys.readouterr()
    assert translations.main(["update", "zh/masks.md#causal"], repository) == 0
    assert capsys.readouterr().out == (
        "docs/zh/masks.md 现已记录 docs/en/masks.md 的小节 'causal'：2 个小节中 1 个已是最新。\n"
    )
    assert [s.id for s in records.page_state("zh", "masks.md", docs).outdated] == ["masks"]
    assert list(records.read_sections(chinese.read_text("utf-8"))) == ["masks", "causal"]  # the page's order
    # A section whose translation fails a check is not recorded alone either.
    _edit(chinese, "tensor(3)", "tensor(4)")
    assert translations.main(["update", "zh/masks.md#causal"], repository) == 1
    assert "未记录：请先修复 docs/zh/masks.md 中上面列出的 1 个问题。" in capsys.readouterr().out
    _edit(chinese, "tensor(4)", "tensor(3)")
    assert translations.main(["update", "zh/masks.md#gone"], repository) == 1
    assert "都必须有小节 { #gone }" in capsys.readouterr().out

    # A review vouches for a current translation only.
    assert translations.main(["review", "zh/masks.md", "--by", "li-wei"], repository) == 1
    assert "docs/zh/masks.md 待更新" in capsys.readouterr().out
    _edit(chinese, "参见[注意力权重]", "参见[注意力权重]")
    assert translations.main(["update", "zh/masks.md"], repository) == 0
    assert translations.main(["review", "zh/masks.md", "--by", "li wei; rm"], repository) == 2
    assert translations.main(["review", "zh/masks.md", "--by", "li-wei"], repository) == 0
    assert records.page_state("zh", "masks.md", docs).reviewed_by == "li-wei"
    capsys.readouterr()
    translations.main(["status", "--brief"], repository)
    status = capsys.readouterr().out
    assert re.search(r"^masks\.md +up to date 2/2 reviewed", status, re.MULTILINE)
    assert "简体中文（zh）：2 个已是最新，0 个待更新，0 个未翻译；1 个已审校" in status
    # Recording the English again keeps the review; any edit of the Chinese text undoes it.
    assert translations.main(["update", "zh/masks.md"], repository) == 0
    assert records.page_state("zh", "masks.md", docs).reviewed_by == "li-wei"
    _edit(chinese, "掩码让每个查询", "掩码让每一个查询")
    assert records.page_state("zh", "masks.md", docs).reviewed_by is None


def test_a_section_translated_from_text_the_history_lacks_is_named(repository: Path, capsys) -> None:
    chinese = repository / "docs" / "zh" / "masks.md"
    text = chinese.read_text(encoding="utf-8")
    recorded = records.read_sections(text)
    chinese.write_text(records.with_front_matter(text, records.SECTIONS_KEY, {**recorded, "causal": "f" * 12}), "utf-8")
    capsys.readouterr()
    assert translations.main(["diff", "zh/masks.md"], repository) == 0
    out = capsys.readouterr().out
    assert out.startswith("docs/en/masks.md#causal：翻译之后英文原文有改动。")
    assert "译文当初依据的英文原文不在当前克隆的提交历史中" in out
    assert "可能是浅克隆（运行 `git fetch --unshallow`）" in out
    assert "记录译文时依据的英文从未在这里提交过" in out


# What an outside tester of the records found (helper session, 2026-11-26, without reading these tests): each case
# as a contributor meets it.

EXTRA = "\n## Extra { #extra }\n\nOne more section.\n"
EXTRA_ZH = "\n## 另一节 { #extra }\n\n又一节。\n"


def _with_extra(repository: Path) -> tuple[Path, Path]:
    """The repository with a third section in both languages, recorded and committed."""
    english, chinese = repository / "docs" / "en" / "masks.md", repository / "docs" / "zh" / "masks.md"
    english.write_text(english.read_text("utf-8") + EXTRA, encoding="utf-8")
    chinese.write_text(chinese.read_text("utf-8") + EXTRA_ZH, encoding="utf-8")
    assert translations.update(["zh/masks.md"], repository) == 0
    _git(repository, "commit", "-q", "-am", "extra")
    return english, chinese


@pytest.mark.parametrize(
    "command", [["update", "en/masks.md#causal"], ["diff", "en/masks.md"], ["review", "en/masks.md", "--by", "x"]]
)
def test_the_english_pages_are_never_taken_for_translations(repository: Path, command: list[str]) -> None:
    with pytest.raises(SystemExit, match="en/ holds the English pages, which are not translations"):
        translations.main(command, repository)
    assert "source_sections" not in (repository / "docs" / "en" / "masks.md").read_text("utf-8")


def test_a_section_recorded_alone_is_checked_alone(repository: Path, capsys) -> None:
    """A block English added at a section's end is that section's problem, even where the check names the line
    of the next block."""
    english = repository / "docs" / "en" / "masks.md"
    _edit(
        english,
        "print(mask.sum())\n```\n\n```output\ntensor(3)\n```\n",
        "print(mask.sum())\n```\n\n```output\ntensor(3)\n```\n\n```python\nprint(1)\n```\n\n```output\n1\n```\n",
    )
    assert translations.main(["update", "zh/masks.md#causal"], repository) == 1
    assert "英文页面有 4 个代码块和输出块，此页面只有 2 个" in capsys.readouterr().out
    _edit(english, "see [weights]", "see [the weights]")
    assert translations.main(["update", "zh/masks.md#masks"], repository) == 0  # its own section is fine


def test_a_record_left_conflicted_by_a_merge_is_named_with_the_way_out(repository: Path, capsys) -> None:
    chinese = repository / "docs" / "zh" / "masks.md"
    text = chinese.read_text("utf-8")
    line = next(line for line in text.splitlines() if line.startswith('  "causal"'))
    chinese.write_text(text.replace(line, f'<<<<<<< HEAD\n{line}\n=======\n  "causal": "abc"\n>>>>>>> other'), "utf-8")
    assert translations.main(["status", "--brief"], repository) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"translations: {chinese}: its front matter is not valid YAML (a merge conflict")
    assert "without the <<<<<<< ======= >>>>>>> lines" in out
    (problem,) = [p for p in translation_checks.check_page("zh", "masks.md", repository) if "YAML" in p.what]
    assert problem.path == "docs/zh/masks.md"


def test_a_section_removed_from_english_is_listed_until_the_translation_drops_it(
    repository: Path, capsys, monkeypatch, tmp_path_factory
) -> None:
    english, chinese = _with_extra(repository)
    _edit(english, EXTRA, "")
    state = records.page_state("zh", "masks.md", repository / "docs")
    assert (state.state, state.outdated, state.removed) == (records.OUTDATED, [], ["extra"])
    translations.main(["status", "--brief"], repository)
    assert "zh/masks.md：英文页面已删除的小节（这里也要删除）：#extra" in capsys.readouterr().out
    _git(repository, "commit", "-q", "-am", "drop extra")
    summary = tmp_path_factory.mktemp("summary") / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    translations.main(["status", "--github-base", "HEAD~1"], repository)
    assert "which English no longer has" in capsys.readouterr().out
    assert "Removed from the English page, still in the translation: `#extra`." in summary.read_text("utf-8")
    _edit(chinese, EXTRA_ZH, "")
    assert translations.main(["update", "zh/masks.md"], repository) == 0
    assert records.state("zh", "masks.md", repository / "docs") == records.UP_TO_DATE


def test_a_renamed_id_shows_only_what_changed_and_its_old_record_goes(repository: Path, capsys) -> None:
    english, chinese = repository / "docs" / "en" / "masks.md", repository / "docs" / "zh" / "masks.md"
    _edit(english, "{ #causal }", "{ #causal-masks }")
    capsys.readouterr()
    translations.main(["diff", "zh/masks.md"], repository)
    diff = capsys.readouterr().out
    assert "docs/en/masks.md#causal-masks：它的 id 原来是 #causal，请把译文标题的 id 也改成新的" in diff
    assert "-## Causal masks { #causal }\n+## Causal masks { #causal-masks }\n" in diff
    assert "+mask = torch.triu" not in diff  # the rest of the section is unchanged, not shown as new
    _edit(chinese, "{ #causal }", "{ #causal-masks }")
    assert translations.main(["update", "zh/masks.md#causal-masks"], repository) == 0
    assert records.state("zh", "masks.md", repository / "docs") == records.UP_TO_DATE
    assert "causal" not in records.read_sections(chinese.read_text("utf-8"))


def test_text_before_the_title_is_named_so(repository: Path, capsys) -> None:
    english = repository / "docs" / "en" / "masks.md"
    english.write_text("<!-- a note for writers -->\n\n" + english.read_text("utf-8"), encoding="utf-8")
    translations.main(["status", "--brief"], repository)
    assert "zh/masks.md：待更新的小节：标题之前的文字\n" in capsys.readouterr().out


def test_marking_the_same_fix_twice_says_it_is_current_already(repository: Path, capsys) -> None:
    english = repository / "docs" / "en" / "masks.md"
    _edit(english, "from each query", "from every query")
    assert translations.main(["no-translation-needed", "en/masks.md"], repository) == 0
    capsys.readouterr()
    assert translations.main(["no-translation-needed", "en/masks.md"], repository) == 0
    assert capsys.readouterr().out == "docs/zh/masks.md: #masks current already: nothing to record.\n"
    assert translations.main(["no-translation-needed", "en/masks.md", "--since", "nowhere"], repository) == 2
    assert "--since nowhere: not a commit in this repository" in capsys.readouterr().out
    assert translations.main(["no-translation-needed", "en/masks.md#nowhere"], repository) == 1
    assert "docs/en/masks.md has no section 'nowhere'" in capsys.readouterr().out


def test_an_english_only_change_is_listed_but_fails_no_check_until_update(repository: Path) -> None:
    """A writer may leave the translation for later, as the guide says: a changed code block or a moved section
    makes the page outdated, and the structure checks compare only its current sections; updating the record
    (which vouches for the whole page) checks it all."""
    english, _ = _with_extra(repository)
    text = english.read_text("utf-8")
    causal = text[text.index("## Causal masks") : text.index(EXTRA)]
    english.write_text(text.replace(causal, "").replace(EXTRA, EXTRA + "\n" + causal), encoding="utf-8")
    _edit(english, "diagonal=1)  # (3, 3)", "diagonal=1)  # (3, 3), True above the diagonal")
    state = records.page_state("zh", "masks.md", repository / "docs")
    assert [s.id for s in state.outdated] == ["causal", "extra"] or state.moved
    assert translation_checks.check_page("zh", "masks.md", repository) == []
    assert translation_checks.check_page("zh", "masks.md", repository, strict=True) != []
    assert translations.update(["zh/masks.md"], repository) == 1


def test_what_markdown_ignores_changes_no_section(repository: Path) -> None:
    english = repository / "docs" / "en" / "masks.md"
    _edit(english, "## Causal masks { #causal }\n\n", "## Causal masks { #causal }  \n\n\n\n")
    english.write_bytes(english.read_bytes().replace(b"\n", b"\r\n"))
    assert records.state("zh", "masks.md", repository / "docs") == records.UP_TO_DATE


def test_the_pull_request_is_compared_with_where_it_branched(repository: Path, capsys) -> None:
    """Run locally on a branch whose base has moved on: the base's own changes are not this pull request's."""
    english = repository / "docs" / "en" / "masks.md"
    _git(repository, "branch", "-q", "-M", "main")
    _git(repository, "checkout", "-q", "-b", "fix")
    _edit(english, "from each query", "from every query")
    translations.main(["no-translation-needed", "en/masks.md"], repository)
    _git(repository, "commit", "-q", "-am", "typo")
    _git(repository, "checkout", "-q", "main")
    _edit(english, "## Causal masks { #causal }\n\n", "## Causal masks { #causal }\n\n" + SEES)
    _git(repository, "commit", "-q", "-am", "main moves on")
    _git(repository, "checkout", "-q", "fix")
    capsys.readouterr()
    translations.main(["status", "--github-base", "main"], repository)
    out = capsys.readouterr().out
    assert "changes #masks in English" in out
    assert "#causal" not in out


def test_the_summary_escapes_a_headings_html_and_shows_its_code() -> None:
    section = records.Section("float16", "Why `-1e9` < 0 & more", 1, "## x")
    assert translations._details(section, "+x\n")[0] == (
        "<details><summary>#float16: Why <code>-1e9</code> &lt; 0 &amp; more</summary>"
    )


def test_a_record_change_keeps_a_windows_checkouts_line_endings(repository: Path) -> None:
    english, chinese = repository / "docs" / "en" / "masks.md", repository / "docs" / "zh" / "masks.md"
    chinese.write_bytes(chinese.read_bytes().replace(b"\n", b"\r\n"))
    _edit(english, "from each query", "from every query")
    assert translations.main(["no-translation-needed", "en/masks.md"], repository) == 0
    data = chinese.read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n")


def test_a_line_break_in_a_block_is_shown_as_such(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, CHINESE.replace("import torch\n", "import torch as torch\n"))
    assert "这里是 `as`，英文页面是 `\\n`" in problem.what
    assert "\n" not in problem.what


# ---------------------------------------------------------------------------------------------------
# The guide, the templates and the links to them
# ---------------------------------------------------------------------------------------------------

GUIDES = {"en": ROOT / "CONTRIBUTING.md", "zh": ROOT / "CONTRIBUTING.zh-CN.md"}
TEMPLATE = ROOT / ".github" / "PULL_REQUEST_TEMPLATE" / "translation.md"
COMMAND = re.compile(r"python3? dev\.py translations(?: (?P<sub>[a-z-]+))?(?P<rest>[^`\n]*)")


def test_the_guide_exists_in_both_languages_and_is_linked_from_the_readmes_and_the_site() -> None:
    for readme in ("README.md", "README.zh-CN.md"):
        text = (ROOT / readme).read_text(encoding="utf-8")
        assert "](CONTRIBUTING.md)" in text, readme
        assert "](CONTRIBUTING.zh-CN.md)" in text, readme
    assert "](CONTRIBUTING.zh-CN.md)" in GUIDES["en"].read_text(encoding="utf-8")
    assert "](CONTRIBUTING.md)" in GUIDES["zh"].read_text(encoding="utf-8")
    repository = site_config.config()["extra"]["repository"]
    for lang, guide in GUIDES.items():
        for page in ("index.md", "translation-status.md"):
            text = (ROOT / "docs" / lang / page).read_text(encoding="utf-8")
            assert f"]({repository}/blob/main/{guide.name}" in text, (lang, page)


def test_both_guides_have_the_same_sections() -> None:
    """The Chinese guide is a translation: the same sections, in the same order, the same commands."""
    structure = {}
    for lang, guide in GUIDES.items():
        text = guide.read_text(encoding="utf-8")
        structure[lang] = (
            [len(heading) for heading in re.findall(r"^(#+) ", without_code(text), re.MULTILINE)],
            sorted(re.findall(r"(?:python3|\.venv/bin/python) [\w./-]+(?: [a-z][\w-]*)?", text)),
        )
    assert structure["en"] == structure["zh"]
    text = GUIDES["en"].read_text(encoding="utf-8")
    for topic in ("### How the languages are laid out", "### What is translated, and what never is", "preview",
                  "### The glossary rule", "### How a translation is reviewed", "native speaker",
                  "### Adding a language", "?template=translation.md"):  # fmt: skip
        assert topic in text, topic


def test_adding_a_language_names_every_part_of_the_config_a_language_translates() -> None:
    """What a new language must translate in ``mkdocs.yml``, the guides list in full: each key of ``extra``
    that ``zh`` overrides, and its navigation titles, so that no part of the site stays English unnoticed."""
    english, chinese = site_config.config()["extra"], site_config.extra("zh")
    keys = {f"`{key}`" for key, value in chinese.items() if value != english.get(key)} | {"`nav_translations`"}
    assert {"`library_source`", "`not_found`", "`notebook`"} <= keys
    for lang, guide in GUIDES.items():
        section = guide.read_text(encoding="utf-8").split("### ")
        (adding,) = [part for part in section if part.startswith(("Adding a language", "添加一种语言"))]
        assert {key for key in keys if key not in adding} == set(), lang


def test_the_commands_the_guide_and_templates_give_exist() -> None:
    subcommands = {"status", "diff", "check", "update", "no-translation-needed", "review", "add-language", None}
    texts = [*GUIDES.values(), TEMPLATE, ROOT / ".github" / "pull_request_template.md", ROOT / "README.md"]
    found = 0
    for path in texts:
        for match in COMMAND.finditer(path.read_text(encoding="utf-8")):
            assert match["sub"] in subcommands, (path.name, match.group(0))
            found += 1
    assert found >= 12


def test_the_guides_example_message_is_what_the_check_prints(tmp_path: Path) -> None:
    """Each guide shows what the check prints about a changed line of code: the Chinese guide a Chinese page's
    problem, in Chinese; the English guide the same problem as a page of a language the tooling has no messages
    in (French) gets it, in English."""
    fence = re.compile(r"^(?P<indent> *)```text\n(?P<body>.*?)^(?P=indent)```$", re.MULTILINE | re.DOTALL)
    examples = {lang: fence.search(guide.read_text(encoding="utf-8")) for lang, guide in GUIDES.items()}
    changed = CHINESE.replace("diagonal=1)  # 形状", "diagonal=2)  # 形状")
    (tmp_path / "zh").mkdir()
    (chinese,) = _problems(tmp_path / "zh", changed)
    french = tmp_path / "fr" / "docs" / "fr" / "masks.md"
    french.parent.mkdir(parents=True)
    _project(tmp_path / "fr", {"masks.md": ENGLISH}, {})
    french.write_text(_current(changed, ENGLISH), encoding="utf-8")
    (english,) = translation_checks.check_page("fr", "masks.md", tmp_path / "fr")
    for lang, problem in (("zh", chinese), ("en", english)):
        example = textwrap.dedent(examples[lang]["body"]).strip()
        assert re.sub(r"\.md:\d+", ".md:N", example) == re.sub(r"\.md:\d+", ".md:N", str(problem)), lang


def test_the_translation_pull_request_template() -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    assert len(re.findall(r"^- \[ \] ", text, re.MULTILINE)) >= 5
    for must in ("translations check", "translations update", "dev.py notebooks", "python3 dev.py test",
                 "glossary", "native speaker", "术语表"):  # fmt: skip
        assert must in text, must
    assert "?template=translation.md" in (ROOT / ".github" / "pull_request_template.md").read_text(encoding="utf-8")


def _collected(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def test_the_quick_check_selects_one_page_and_names_a_wrong_one() -> None:
    """``python3 dev.py page docs/zh/masks.md`` runs pytest with ``--page``: only what checks that page, its
    code blocks, its notebook and its translation checks among them; a path that is not a page is named."""
    result = _collected(
        "--page", "docs/zh/masks.md", "docs/zh/masks.md", "docs/en/masks.md", "tests/pages/test_notebooks.py",
        "tests/pages/test_glossary.py", "tests/tooling/test_translations.py",
    )  # fmt: skip
    ids = [line for line in result.stdout.splitlines() if "::" in line]
    assert ids, result.stdout + result.stderr
    assert all("masks" in test_id for test_id in ids), ids
    assert any(test_id.startswith("docs/zh/masks.md::") for test_id in ids)
    assert (
        "tests/pages/test_notebooks.py::test_notebook_runs_top_to_bottom_and_shows_what_its_page_shows[zh/masks]" in ids
    )
    assert "tests/tooling/test_translations.py::test_translation_passes_the_structure_checks[zh/masks.md]" in ids
    wrong = _collected("--page", "README.md", "tests/pages/test_glossary.py")
    assert wrong.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--page: expected a page as docs/<lang>/<page>.md, got README.md" in wrong.stderr


# ---------------------------------------------------------------------------------------------------
# The exercise checker's messages: a translated file like a page, and the checker's language on a page
# ---------------------------------------------------------------------------------------------------

MESSAGES_EN = """\
# The messages.

[labels]
hint = "Hint: "

[problems]
shape = "the {what} have shape {got}, expected {expected}"

[self_attention]
lib_causal = "masked_softmax(attn_scores, causal_mask(n))"
scale_d_k = "your weights are too flat: divide the scores by `keys.shape[-1] ** 0.5`, not by d_k."
"""
MESSAGES_ZH = """\
[labels]
hint = "提示："

[problems]
shape = "{what}的形状是 {got}，应为 {expected}"

[self_attention]
lib_causal = "masked_softmax(attn_scores, causal_mask(n))"
scale_d_k = "你的注意力权重太平坦了：分数要除以 `keys.shape[-1] ** 0.5`，而不是 d_k 本身。"
"""


def _messages_project(root: Path, zh: str | None) -> Path:
    _project(root, {"a.md": "# A { #a }\n"}, {"a.md": "# 甲 { #a }\n"})
    folder = root / records.MESSAGES_FOLDER
    folder.mkdir(parents=True)
    (folder / "en.toml").write_text(MESSAGES_EN, encoding="utf-8")
    if zh is not None:
        (folder / "zh.toml").write_text(zh, encoding="utf-8")
    return root


def test_the_messages_are_tracked_like_a_page(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = _messages_project(tmp_path, MESSAGES_ZH)
    assert records.messages_state("zh", root) == records.OUTDATED  # no record yet
    assert records.split_page("zh/messages.toml") == ("zh", "messages.toml")
    assert records.split_page("exercises/attention_exercises/messages/zh.toml") == ("zh", "messages.toml")
    assert translations.update(["zh/messages.toml"], root) == 0
    text = (root / records.MESSAGES_FOLDER / "zh.toml").read_text(encoding="utf-8")
    assert text == f'source_hash = "{records.source_hash(MESSAGES_EN)}"\n' + MESSAGES_ZH
    assert records.messages_state("zh", root) == records.UP_TO_DATE
    assert translation_checks.check(root, ["zh/messages.toml"]) == []
    assert [problem.path for problem in translation_checks.check(root)] == ["docs/zh/a.md"]  # a.md has no record
    capsys.readouterr()
    translations.print_status(root)
    assert "练习检查器的消息（zh/messages.toml）：已是最新" in capsys.readouterr().out
    # Updating again keeps one record, the new one.
    (root / records.MESSAGES_FOLDER / "en.toml").write_text(MESSAGES_EN + "# changed\n", encoding="utf-8")
    assert records.messages_state("zh", root) == records.OUTDATED
    translations.print_status(root)
    out = capsys.readouterr().out
    assert "（zh/messages.toml）：待更新" in out
    assert "python3 dev.py translations diff zh/messages.toml" in out
    assert translations.update(["zh/messages.toml"], root) == 0
    text = (root / records.MESSAGES_FOLDER / "zh.toml").read_text(encoding="utf-8")
    assert text.count("source_hash") == 1
    assert records.messages_state("zh", root) == records.UP_TO_DATE


def test_missing_messages_in_a_complete_language_are_reported(tmp_path: Path) -> None:
    root = _messages_project(tmp_path, None)
    (problem,) = translation_checks.check_pages_exist(root)
    assert problem.path == "exercises/attention_exercises/messages/zh.toml"
    assert "python3 dev.py translations update zh/messages.toml" in problem.fix


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (("", ""), None),
        (('shape = "{what}的形状是 {got}，应为 {expected}"\n', ""), "[problems] 中没有 shape"),
        (("[labels]\n", '[labels]\nextra = "多余"\n'), "[labels] extra 不在"),
        (("应为 {expected}", "应为 {wanted}"), "[problems] shape 的字段是 ['got', 'wanted', 'what']"),
        (("`keys.shape[-1] ** 0.5`", "`keys.shape[0] ** 0.5`"), "[self_attention] scale_d_k 没有原样保留"),
        (
            (
                "你的注意力权重太平坦了：分数要除以 `keys.shape[-1] ** 0.5`，而不是 d_k 本身。",
                "your weights are too flat: divide the scores by `keys.shape[-1] ** 0.5`, not by d_k.",
            ),
            "[self_attention] scale_d_k 仍是英文",
        ),
        (("提示：", "Hint: "), None),  # one word is not prose to translate
        (("[labels]", "[labels"), "这不是有效的 TOML"),
    ],
)
def test_each_messages_check_can_fail(tmp_path: Path, change: tuple[str, str], what: str | None) -> None:
    root = _messages_project(tmp_path, MESSAGES_ZH.replace(*change) if change[0] else MESSAGES_ZH)
    assert translations.update(["zh/messages.toml"], root) == (0 if what is None else 1)
    problems = translation_checks.check_page("zh", "messages.toml", root)
    if what is None:
        assert problems == []
    else:
        assert [problem.what for problem in problems if what in problem.what], problems
        assert all(problem.path == "exercises/attention_exercises/messages/zh.toml" for problem in problems)


CHECKER_EN = """\
# Masks { #masks }

## Exercises { #exercises }

```python
from attention_exercises import check
```

```python
def answer(x):
    return x


check("exercise-causal-weights", answer)
```

```output
✗ exercise-causal-weights: the attention weights differ from the right ones by
  up to 0.155
  Hint: nothing is masked.
```
"""
CHECKER_ZH = """\
---
source_hash: 0
---

# 掩码 { #masks }

## 练习 { #exercises }

```python
from attention_exercises import check, set_language

set_language("zh")  # 此后的检查结果都用中文显示
```

```python
def answer(x):
    return x


check("exercise-causal-weights", answer)
```

```output
✗ exercise-causal-weights: 注意力权重与正确结果最多相差 0.155
  提示：什么都没有遮住。
```
"""


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (("", ""), None),
        # The checker's language: set once, to the page's own.
        (
            ('\nset_language("zh")  # 此后的检查结果都用中文显示\n', "\n"),
            "练习检查器的语言应当在此页面中设为本页语言，并且只设置一次",
        ),
        (('set_language("zh")', 'set_language("en")'), "练习检查器的语言应当在此页面中设为本页语言，并且只设置一次"),
        (("check, set_language\n", "check\n"), "练习检查器的语言应当在此页面中设为本页语言，并且只设置一次"),
        # Its verdicts are compared; the rest of what it prints is in the page's language.
        (("✗ exercise-causal-weights: 注意力", "✓ exercise-causal-weights: 注意力"), "块与英文页面"),
        (("✗ exercise-causal-weights: 注意力", "✗ exercise-causal-scores: 注意力"), "块与英文页面"),
        # Any other code still counts.
        (("return x\n", "return x + 1\n"), "块与英文页面"),
    ],
)
def test_a_translated_page_sets_the_checkers_language_and_shows_its_verdicts(
    tmp_path: Path, change: tuple[str, str], what: str | None
) -> None:
    chinese = CHECKER_ZH.replace(*change) if change[0] else CHECKER_ZH
    root = _project(tmp_path, {"masks.md": CHECKER_EN}, {"masks.md": chinese})
    checked = translation_checks.check_page("zh", "masks.md", root, strict=True)
    problems = [p for p in checked if "版本记录" not in p.what]
    if what is None:
        assert problems == []
    else:
        assert [problem for problem in problems if what in problem.what], problems


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("缓存快 1.4 倍。\n", [1]),  # read strictly, 2.4 times as fast
        ("便宜几十倍\n", [1]),
        ("它小多少倍？\n", [1]),
        ("大了 17 倍，\n", [1]),
        ("内存少了约 3 倍\n", [1]),
        ("2 倍地增长\n", [1]),
        ("第一行\n\n慢 1,024 倍\n", [3]),
        ("重新计算的耗时是缓存的 1.4 倍。\n", []),  # the rule's form
        ("缓存只有它的几分之一。\n", []),
        ("是 `torch.cat` 缓存的 3.9 到 4.6 倍\n", []),
        ("```python\n# 快 2 倍\n```\n", []),  # code is not prose
        ("`x` 快 2 倍的代码\n", [1]),  # inline code is blanked, the prose around it is read
    ],
)
def test_the_ratio_check_can_fail(text: str, flagged: list[int]) -> None:
    assert [problem.line for problem in translation_checks.check_ratios(text, "x.md")] == flagged


def test_a_checker_message_states_ratios_the_same_way(tmp_path: Path) -> None:
    """The messages of the exercise checker follow the rule too."""
    folder = tmp_path / "exercises" / "attention_exercises" / "messages"
    english, chinese = folder / "en.toml", folder / "zh.toml"
    english.parent.mkdir(parents=True)
    english.write_text('[labels]\nhint = "Hint: "\n[t]\nk = "the weights are 2 times too flat"\n', encoding="utf-8")
    chinese.write_text('source_hash = "0"\n[labels]\nhint = "提示："\n[t]\nk = "权重小了 2 倍"\n', encoding="utf-8")
    found = [problem.what for problem in translation_checks.check_messages("zh", tmp_path)]
    assert any("[t] k：" in what and "比较式的写法" in what for what in found), found
