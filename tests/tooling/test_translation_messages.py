"""The translation tooling speaks the translator's language: every problem the structure checks find on a
page, and every line ``python3 dev.py translations`` prints about it, comes from the catalogue of the page's
language (``docs_tools/messages/<lang>.toml``), or from English where there is none; and the catalogues are
complete and consistent."""

from __future__ import annotations

import re
import shutil
import string
from collections.abc import Callable
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import records, translation_checks, translation_messages, translations
from docs_tools.translation_checks import Problem
from docs_tools.translation_messages import FOLDER, catalogue, say

ROOT = Path(__file__).resolve().parents[2]
HAN = re.compile(r"[\u4e00-\u9fff]")
#: Three or more English words in a row: a sentence, or most of one, left in English.
ENGLISH_WORDS = re.compile(r"[A-Za-z]+(?:[ ,;:!?-]+[A-Za-z]+){2,}")


def _tables(lang: str = "en") -> dict[str, dict[str, str]]:
    """``{table: {key: template}}`` of a catalogue."""
    found: dict[str, dict[str, str]] = {}
    for name, template in catalogue(lang).items():
        table, key = name.split(".")
        found.setdefault(table, {})[key] = template
    return found


#: The kinds of problem: the tables that hold a ``what`` and a ``fix``.
KINDS = sorted(table for table, keys in _tables().items() if {"what", "fix"} <= set(keys))


def _english_left(template: str) -> list[str]:
    """The runs of English words in a translated message, outside what is never translated: its {fields},
    code in backticks, quoted text, and paths, files and commands."""
    text = re.sub(r"\{[^{}]*\}|`[^`]*`|“[^”]*”|'[^']*'|\"[^\"]*\"", " ", template)
    text = re.sub(r"\S*[A-Za-z0-9][/.][A-Za-z]\S*", " ", text)
    return ENGLISH_WORDS.findall(text)


def _said_by(template: str, message: str) -> bool:
    """Whether ``message`` is ``template`` with its fields filled in."""
    pattern = "".join(
        re.escape(literal) + ("(?:.*?)" if field is not None else "")
        for literal, field, _, _ in string.Formatter().parse(template)
    )
    return re.fullmatch(pattern, message, re.DOTALL) is not None


# ---------------------------------------------------------------------------------------------------
# The catalogues: complete, consistent, and the check of that can fail
# ---------------------------------------------------------------------------------------------------


def test_the_catalogues_are_complete_and_consistent() -> None:
    """Every language has every English message and no other, with the same {fields} and the same code in
    backticks, and (in Chinese) no message left in English: the checks the exercise checker's translated
    messages pass."""
    assert translation_messages.languages() == ("en", "zh")
    problems = translation_checks.check_tooling_messages()
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize("name", sorted(catalogue("zh")))
def test_each_chinese_message_is_chinese(name: str) -> None:
    """Written in Chinese, with English only where it is never translated (code, paths, commands, the
    {fields}) or is the name a Chinese project uses too (pull request, front matter, YAML)."""
    template = catalogue("zh")[name]
    english = catalogue("en")[name]
    if HAN.search(english):
        return  # the ratio rule's own Chinese examples, quoted in both
    words = re.sub(r"\{[^{}]*\}|`[^`]*`", " ", english)
    if len(re.findall(r"[A-Za-z]{2,}", words)) >= 2:
        assert HAN.search(template), (name, template)
    assert _english_left(template) == [], (name, template)
    assert "\n" not in template  # no hard-wrapped Chinese line


def _catalogues(tmp_path: Path, zh: Callable[[str], str] = str, fr: str | None = None) -> Path:
    """A copy of the catalogues, the Chinese one changed by ``zh``, and a third language's file ``fr``."""
    folder = tmp_path / "docs_tools" / "messages"
    folder.mkdir(parents=True)
    shutil.copy(FOLDER / "en.toml", folder / "en.toml")
    (folder / "zh.toml").write_text(zh((FOLDER / "zh.toml").read_text(encoding="utf-8")), encoding="utf-8")
    if fr is not None:
        (folder / "fr.toml").write_text(fr, encoding="utf-8")
    return folder


def _drop(line: str) -> Callable[[str], str]:
    def change(text: str) -> str:
        assert text.count(line + "\n") == 1, line
        return text.replace(line + "\n", "")

    return change


def _replace(old: str, new: str) -> Callable[[str], str]:
    def change(text: str) -> str:
        assert text.count(old) == 1, old
        return text.replace(old, new)

    return change


@pytest.mark.parametrize(
    ("change", "kind", "what"),
    [
        (_drop('passed = "全部翻译检查均已通过。"'), "messages_missing_key", "[cli] 中没有 passed"),
        (
            _replace("未记录：请先修复 {shown} 中上面列出的 {count}", "未记录：请先修复 {shown} 中上面列出的 {number}"),
            "messages_fields",
            "[cli] not_recorded 的字段是 ['number', 'shown']，英文消息的字段是 ['count', 'shown']",
        ),
        (_replace("{en_path}:{en_line}，id {id!r}", "{en_path}:{en_line}，id {ids!r}"), "messages_fields", None),
        (_replace("把 {en_path} 的", "把 {英文路径} 的"), "messages_fields", None),
        (_replace("`git fetch --unshallow`）。请", "git fetch --unshallow）。请"), "messages_code", None),
        (_replace("全部翻译检查均已通过。", "All translation checks passed."), "messages_english", None),
        (_replace("[words]\n", '[words]\nextra = "多余"\n'), "messages_extra_key", "[words] extra 不在"),
        (_replace('passed = "全部', 'passed = "快 2 倍，全部'), "ratio", "[cli] passed："),
        (_replace("[cli]\n", "[cli\n"), "messages_toml", "这不是有效的 TOML"),
    ],
    ids=[
        "missing-key",
        "renamed-field",
        "renamed-field-r",
        "translated-field",
        "code",
        "english",
        "extra",
        "ratio",
        "toml",
    ],
)
def test_the_catalogue_check_can_fail(
    tmp_path: Path, change: Callable[[str], str], kind: str, what: str | None
) -> None:
    """A key missing, a placeholder renamed or translated, code changed, a message left in English, a key
    English lacks, a ratio said as a comparative, a file that is not TOML: each is found, named in Chinese
    (the file is Chinese), and the untouched copy passes."""
    assert translation_checks.check_tooling_messages(_catalogues(tmp_path / "same"), tmp_path / "same") == []
    folder = _catalogues(tmp_path / "changed", change)
    problems = translation_checks.check_tooling_messages(folder, tmp_path / "changed")
    assert [problem.kind for problem in problems] == [kind], "\n".join(map(str, problems))
    (problem,) = problems
    assert problem.path == "docs_tools/messages/zh.toml"
    assert problem.lang == "zh"
    assert HAN.search(problem.what)
    assert HAN.search(problem.fix)
    if what is not None:
        assert what in problem.what


def test_a_third_languages_catalogue_is_checked_as_well(tmp_path: Path) -> None:
    """Every file in the folder is a language: a French one missing a key or with a wrong placeholder fails,
    said in English (there is no French for the tooling's own words until the file is complete)."""
    english = (FOLDER / "en.toml").read_text(encoding="utf-8")
    folder = _catalogues(tmp_path, fr=english)
    assert translation_messages.languages(folder) == ("en", "fr", "zh")
    assert translation_checks.check_tooling_messages(folder, tmp_path) == []
    broken = english.replace('passed = "All translation checks passed."\n', "")
    broken = broken.replace('problems = "{count}', 'problems = "{n}')
    (folder / "fr.toml").write_text(broken, encoding="utf-8")
    problems = translation_checks.check_tooling_messages(folder, tmp_path)
    assert [(problem.path, problem.what) for problem in problems] == [
        ("docs_tools/messages/fr.toml", "[cli] problems has the fields ['n'], the English one ['count']"),
        ("docs_tools/messages/fr.toml", "[cli] has no passed"),
    ]


def test_a_language_without_a_message_says_it_in_english() -> None:
    assert say("zh", "cli.passed") == "全部翻译检查均已通过。"
    assert say("fr", "cli.passed") == say("en", "cli.passed") == "All translation checks passed."
    assert say("zh_TW", "states.outdated") == "outdated"  # Traditional Chinese is not Simplified Chinese
    with pytest.raises(KeyError, match=r"key 'cli\.nowhere' is not a message of"):
        say("zh", "cli.nowhere")
    with pytest.raises(TypeError, match=r"expected the fields \['count'\], got \[\]"):
        say("zh", "cli.problems")


# ---------------------------------------------------------------------------------------------------
# Every kind of problem, on a Chinese page and on a page of a language without a catalogue
# ---------------------------------------------------------------------------------------------------

ENGLISH = """\
# Masks { #masks }

A mask hides some positions from each query; see [weights](attention-weights.md#softmax).

![The causal mask](../assets/figures/causal.svg)

## Causal masks { #causal }

```python
import torch

mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
print(mask.sum())
```

```output
tensor(3)
```
"""

TRANSLATED = """\
# 掩码 { #masks }

掩码让每个查询看不到某些位置，参见[注意力权重](attention-weights.md#softmax)。

![因果掩码](../assets/figures/causal.svg)

## 因果掩码 { #causal }

```python
import torch

mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
print(mask.sum())
```

```output
tensor(3)
```
"""


def _recorded(translated: str, english: str) -> str:
    """``translated`` with a record of every section of ``english``: an up-to-date translation of it."""
    return records.with_front_matter(
        translated, records.SECTIONS_KEY, {s.id: s.hash for s in records.sections(english)}
    )


def _project(root: Path, locale: str, english: str | None, translated: str, *, record: bool = True) -> Path:
    """A project with English and ``locale`` configured (``locale`` complete), and one page in both."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yml").write_text(
        "plugins:\n  - i18n:\n      languages:\n"
        "        - locale: en\n          name: English\n          default: true\n"
        f"        - locale: {locale}\n          name: Lang-{locale}\n"
        f"extra:\n  complete_languages: [{locale}]\n",
        encoding="utf-8",
    )
    for folder, text in ((site_config.SOURCE, english), (locale, translated)):
        if text is None:
            continue
        if folder == locale and record and english is not None:
            text = _recorded(text, english)
        path = root / "docs" / folder / "masks.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _page(
    english: str | None = ENGLISH, translated: str = TRANSLATED, **options: bool
) -> Callable[[Path, str], list[Problem]]:
    """A scenario: the problems of the page ``translated`` against ``english`` (None: no English page),
    checked whole."""

    def problems(root: Path, locale: str) -> list[Problem]:
        _project(root, locale, english, translated, **options)
        return translation_checks.check_page(locale, "masks.md", root, strict=True)

    return problems


def _changed(old: str, new: str, english: bool = False) -> Callable[[Path, str], list[Problem]]:
    """A scenario: the translation (or the English page) with ``old`` replaced by ``new``."""
    text = ENGLISH if english else TRANSLATED
    assert text.count(old) == 1, old
    return _page(ENGLISH.replace(old, new), TRANSLATED) if english else _page(ENGLISH, TRANSLATED.replace(old, new))


CHECKER_ENGLISH = "# A { #a }\n\n```python\nfrom attention_exercises import check\n```\n"
CHECKER_TRANSLATED = "# 甲 { #a }\n\n```python\nfrom attention_exercises import check\n```\n"
GLOSSARY = [("attention score", "注意力分数", ["关注分数"]), ("dropout", "Dropout", ["暂退法"])]


def _glossary(root: Path, locale: str) -> list[Problem]:
    text = "关注分数出现了。\n\n暂退法单独出现，没有解释。\n\nDropout（暂退法）一次，暂退法两次。\n"
    return translation_checks.check_glossary(text, f"docs/{locale}/dropout.md", locale, GLOSSARY, ["暂退法"])


def _missing(root: Path, locale: str) -> list[Problem]:
    """A complete language without a page, and without the exercise checker's messages."""
    _project(root, locale, ENGLISH, TRANSLATED)
    (root / "docs" / site_config.SOURCE / "other.md").write_text("# Other { #other }\n", encoding="utf-8")
    english = root / records.MESSAGES_FOLDER / "en.toml"
    english.parent.mkdir(parents=True)
    english.write_text('[labels]\nhint = "Hint: "\n', encoding="utf-8")
    return translation_checks.check_pages_exist(root)


#: The start of a translation of MESSAGES_EN, up to its [problems] table's one message.
HINT = '[labels]\nhint = "提示："\n\n[problems]\n'
MESSAGES_EN = '[labels]\nhint = "Hint: "\n\n[problems]\nshape = "the {what} have shape {got}, expected `(b, t)`"\n'


def _messages(translated: str) -> Callable[[Path, str], list[Problem]]:
    """A scenario: the exercise checker's messages translated as ``translated``, with no freshness record."""

    def problems(root: Path, locale: str) -> list[Problem]:
        folder = root / records.MESSAGES_FOLDER
        folder.mkdir(parents=True)
        (folder / "en.toml").write_text(MESSAGES_EN, encoding="utf-8")
        (folder / f"{locale}.toml").write_text(translated, encoding="utf-8")
        return translation_checks.check_messages(locale, root)

    return problems


#: For each kind of problem, a page (or file) that has it.
SCENARIOS: dict[str, Callable[[Path, str], list[Problem]]] = {
    "page_absent": _missing,
    "messages_absent": _missing,
    "no_english_page": _page(None, TRANSLATED),
    "front_matter": _page(ENGLISH, "---\nsource_sections: {a: [\n---\n\n" + TRANSLATED, record=False),
    "record_missing": _page(ENGLISH, TRANSLATED, record=False),
    "heading_missing": _changed("{ #causal }", "{ #yinguo }"),
    "heading_extra": _changed("{ #causal }", "{ #yinguo }"),
    "heading_without_id": _changed(" { #causal }", ""),
    "block_kind": _changed("```output\n", "```console\n"),
    "block_differs": _changed("diagonal=1", "diagonal=2"),
    "block_shorter": _changed("```output\ntensor(3)\n", "```output\n"),
    "block_longer": _changed("tensor(3)\n", "tensor(3)\ntensor(4)\n"),
    "blocks_missing": _changed("\n```output\ntensor(3)\n```\n", ""),
    "blocks_extra": _changed("tensor(3)\n```\n", "tensor(3)\n```\n\n```output\n1\n```\n"),
    "checker_language": _page(CHECKER_ENGLISH, CHECKER_TRANSLATED),
    "interactive": _changed("## Causal", '<div data-attention-explorer="scores"></div>\n\n## Causal', english=True),
    "link_missing": _changed("![因果掩码](../assets/figures/causal.svg)\n", ""),
    "link_extra": _changed("#softmax)", "#normalize)"),
    "same_line": _changed("## 因果掩码", "## Causal masks"),
    "english_left": _changed("参见", "as the model must never see the future, 参见"),
    "line_break_gap": lambda _, locale: translation_checks.check_line_breaks("第一句\n断开了。\n", "x.md", locale),
    "line_break": lambda _, locale: translation_checks.check_line_breaks("第一句\nPyTorch 断开。\n", "x.md", locale),
    "ratio": lambda _, locale: translation_checks.check_ratios("缓存快 2 倍。\n", "x.md", locale),
    "glossary": _glossary,
    "glossary_once_used": _glossary,
    "glossary_once_here": _glossary,
    "messages_toml": _messages("[labels\n"),
    "messages_record": _messages(HINT + 'shape = "{what}的形状是 {got}，应为 `(b, t)`"\n'),
    "messages_missing_key": _messages('source_hash = "0"\n[labels]\nhint = "提示："\n'),
    "messages_fields": _messages(HINT + 'shape = "{what}的形状是 {shape}，应为 `(b, t)`"\n'),
    "messages_code": _messages(HINT + 'shape = "{what}的形状是 {got}，应为 (b, t)"\n'),
    "messages_english": _messages(HINT + 'shape = "the {what} have shape {got}, expected `(b, t)`"\n'),
    "messages_extra_key": _messages('[labels]\nhint = "提示："\nmore = "多余"\n'),
}

#: What only a language written in CJK characters is checked for: a run of English words is a sign of
#: untranslated text there, not in French.
CJK_ONLY = {"english_left", "messages_english"}


def test_every_kind_of_problem_has_a_scenario() -> None:
    """A new kind of problem in the catalogue needs a page below that has it, so that its Chinese is shown to
    be said."""
    assert sorted(SCENARIOS) == KINDS


@pytest.mark.parametrize("kind", KINDS)
def test_a_chinese_pages_problem_is_said_in_chinese(tmp_path: Path, kind: str) -> None:
    problems = [problem for problem in SCENARIOS[kind](tmp_path, "zh") if problem.kind == kind]
    assert problems, kind
    for problem in problems:
        assert problem.lang == "zh"
        assert _said_by(catalogue("zh")[f"{kind}.fix"], problem.fix), problem
        assert HAN.search(problem.what), problem
        assert HAN.search(problem.fix), problem
        assert HAN.search(str(problem).splitlines()[1]), problem  # 如何修复：...
        assert "how to fix" not in str(problem)
        wrapped = catalogue("zh")["messages_in_key.what"]
        own = catalogue("zh")[f"{kind}.what"]
        assert _said_by(own, problem.what) or _said_by(wrapped, problem.what), problem
        assert not _said_by(catalogue("en")[f"{kind}.what"], problem.what), problem


@pytest.mark.parametrize("kind", sorted(set(KINDS) - CJK_ONLY))
def test_a_page_of_a_language_without_a_catalogue_gets_english(tmp_path: Path, kind: str) -> None:
    """French has no catalogue: its translators read the English messages, word for word."""
    problems = [problem for problem in SCENARIOS[kind](tmp_path, "fr") if problem.kind == kind]
    assert problems, kind
    for problem in problems:
        wrapped = catalogue("en")["messages_in_key.what"]
        assert _said_by(catalogue("en")[f"{kind}.what"], problem.what) or _said_by(wrapped, problem.what), problem
        assert _said_by(catalogue("en")[f"{kind}.fix"], problem.fix), problem
        assert str(problem).splitlines()[1].startswith("    how to fix: ")


def test_the_glossary_that_cannot_be_read_is_named_in_its_language(tmp_path: Path) -> None:
    for locale, expected in (("zh", "中有检查无法识别的括号"), ("fr", "has brackets the check cannot read")):
        folder = tmp_path / "docs" / locale
        folder.mkdir(parents=True)
        (folder / "glossary.md").write_text(
            "| a | b | c | d |\n|---|---|---|---|\n| dropout | Dropout | | 暂退法（偶尔） |\n", encoding="utf-8"
        )
        with pytest.raises(ValueError, match=f"docs/{locale}/glossary.md:3: .*{expected}"):
            translation_checks.glossary(tmp_path, locale)


# ---------------------------------------------------------------------------------------------------
# What the command line says about a page
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("locale", "lines"),
    [
        (
            "zh",
            [
                "docs/zh/masks.md:18: 这个 ```python 块与英文页面（docs/en/masks.md:12）不同："
                "这里是 `2`，英文页面是 `1`",
                "    如何修复：代码和输出永远不翻译（只有 # 注释可以翻译）：请从英文页面复制。",
                "未记录：请先修复 docs/zh/masks.md 中上面列出的 1 个问题。",
                "",
                "共 1 个问题。每条规则的说明见 CONTRIBUTING.zh-CN.md。",
                "docs/zh/masks.md 现已记录 docs/en/masks.md 的全部小节：已是最新。",
                "docs/zh/masks.md 已是最新：翻译之后，它的英文原文没有改动。",
                "docs/en/masks.md 没有小节 'nowhere'。它的小节有：masks、causal",
                "translations review：--by 'li wei'：这里应填写审校者的 GitHub 用户名，例如 li-wei",
                "docs/zh/masks.md 已标记为由 li-wei 审校：在译文改动之前，翻译状态页面会一直显示这个标记。",
                "全部翻译检查均已通过。",
            ],
        ),
        (
            "fr",
            [
                "docs/fr/masks.md:18: this ```python block differs from the English page (docs/en/masks.md:12):"
                " here `2`, in English `1`",
                "    how to fix: Code and outputs are never translated (only # comments may be): copy them from the"
                " English page.",
                "Not recorded: fix the 1 problem(s) above in docs/fr/masks.md first.",
                "",
                "1 problem(s). CONTRIBUTING.md (CONTRIBUTING.zh-CN.md) explains each rule.",
                "docs/fr/masks.md now records every section of docs/en/masks.md: up to date.",
                "docs/fr/masks.md is up to date: its English text has not changed since it was translated.",
                "docs/en/masks.md has no section 'nowhere'. Its sections: masks, causal",
                "translations review: --by 'li wei': expected the reviewer's GitHub user name, such as li-wei",
                "docs/fr/masks.md marked reviewed by li-wei: the status page shows it until the translation's text"
                " changes.",
                "All translation checks passed.",
            ],
        ),
    ],
)
def test_the_command_line_speaks_the_pages_language(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], locale: str, lines: list[str]
) -> None:
    """A translator's session: update refused, check, the fix, update, diff, review: every line about the page
    in its language."""
    root = _project(tmp_path, locale, ENGLISH, TRANSLATED.replace("diagonal=1", "diagonal=2"))
    page, translation = f"{locale}/masks.md", root / "docs" / locale / "masks.md"
    assert translations.main(["update", page], root) == 1
    assert translations.main(["check", page], root) == 1
    translation.write_text(TRANSLATED, encoding="utf-8")
    assert translations.main(["update", page], root) == 0
    assert translations.main(["diff", page], root) == 0
    assert translations.main(["diff", page + "#nowhere"], root) == 1
    assert translations.main(["review", page, "--by", "li wei"], root) == 2
    assert translations.main(["review", page, "--by", "li-wei"], root) == 0
    assert translations.main(["check", page], root) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == lines[:3] + lines[:2] + lines[3:]


def test_the_status_details_follow_each_languages_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table is every language at once, in English; below it, a language's details are in its words."""
    root = _project(tmp_path, "zh", ENGLISH.replace("Causal masks {", "Causal masks, again {"), TRANSLATED)
    (root / "docs" / "zh" / "masks.md").write_text(_recorded(TRANSLATED, ENGLISH), encoding="utf-8")
    assert translations.main(["status", "--brief"], root) == 0
    out = capsys.readouterr().out
    assert re.search(r"^page +zh *$", out, re.MULTILINE)
    assert re.search(r"^masks\.md +outdated 1/2 +$", out, re.MULTILINE)
    assert "(N/M: N of the page's M sections current;" in out
    assert "\nLang-zh（zh）：0 个已是最新，1 个待更新，0 个未翻译；0 个已审校\n" in out
    assert "\n  zh/masks.md：待更新的小节：#causal\n" in out
    assert "\n  翻译完成后运行：python3 dev.py translations update zh/masks.md\n" in out
    assert "\n  练习检查器的消息（zh/messages.toml）：未翻译\n" in out


@pytest.mark.parametrize(
    ("locale", "said"),
    [
        ("zh", "front matter 不是有效的 YAML（可能是版本记录中有合并冲突："),
        ("fr", "its front matter is not valid YAML"),
    ],
)
def test_a_conflicted_record_is_named_in_the_pages_language(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], locale: str, said: str
) -> None:
    """diff and review name one page, whose translator reads what is wrong with its record; status, every
    language at once, says it in English."""
    root = _project(tmp_path, locale, ENGLISH, "---\nsource_sections: {a: [\n---\n\n" + TRANSLATED, record=False)
    path = root / "docs" / locale / "masks.md"
    for command in (["diff", f"{locale}/masks.md"], ["review", f"{locale}/masks.md", "--by", "li-wei"]):
        assert translations.main(command, root) == 1
        assert capsys.readouterr().out.startswith(f"translations: {path}: {said}"), command
    assert translations.main(["status", "--brief"], root) == 1
    assert capsys.readouterr().out.startswith(f"translations: {path}: its front matter is not valid YAML")
