"""The checker's messages as data: one file per language (attention_exercises/messages/), every message in every
language with the same fields, the language set once, and hints printed so that their code can be copied.
(The translation tooling checks the rest, as it does a page's: tests/tooling/test_translations.py.)"""

from __future__ import annotations

import re
import string

import attention_exercises
import pytest
import torch
from attention_exercises import LANGUAGES, check, diagnose, set_language
from attention_exercises._core import wrap
from attention_exercises._messages import _language


def _fields(text: str) -> list[str]:
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def test_english_and_chinese_are_spoken() -> None:
    assert LANGUAGES[0] == "en"
    assert "zh" in LANGUAGES


@pytest.mark.parametrize("lang", LANGUAGES[1:])
def test_every_message_exists_in_every_language_with_the_same_fields(lang: str) -> None:
    english, other = _language("en"), _language(lang)
    assert set(other) - {"source_hash"} == set(english)
    for table, entries in english.items():
        assert set(other[table]) == set(entries), table
        for key, text in entries.items():
            assert _fields(other[table][key]) == _fields(text), (table, key)


@pytest.fixture
def chinese():
    set_language("zh")
    yield
    set_language("en")


def _wrong(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


def test_set_language_makes_every_later_message_chinese(chinese: None, capsys: pytest.CaptureFixture) -> None:
    check("exercise-stable-softmax", _wrong)
    printed = capsys.readouterr().out
    assert printed.startswith("✗ exercise-stable-softmax: ")
    assert "提示：" in printed
    assert "Hint" not in printed
    # An explicit lang still wins, for one call.
    assert "Hint: " in str(diagnose("exercise-stable-softmax", _wrong, lang="en"))


def test_the_language_is_english_until_set() -> None:
    assert "Hint: " in str(diagnose("exercise-stable-softmax", _wrong))


@pytest.mark.parametrize("lang", ["fr", "ZH", "", None])
def test_an_unknown_language_is_refused_naming_the_argument(lang: object) -> None:
    with pytest.raises(ValueError, match=r"lang must be one of \('en', 'zh'\)"):
        set_language(lang)  # type: ignore[arg-type]
    assert "Hint: " in str(diagnose("exercise-stable-softmax", _wrong))


def test_the_module_says_what_it_exports() -> None:
    assert {"check", "diagnose", "set_language", "set_time_limit", "LANGUAGES"} <= set(attention_exercises.__all__)


#: Inline code, as the messages write it.
CODE = re.compile(r"`[^`\n]*`")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_printed_hint_breaks_inside_inline_code(lang: str) -> None:
    """Every message of every table, printed as check prints a hint (wrapped at 79 columns), keeps each piece of
    inline code on one line, so that it can be copied as printed."""
    texts = [text for entries in _language(lang).values() if isinstance(entries, dict) for text in entries.values()]
    assert len(texts) > 200
    for text in texts:
        printed = wrap("  Hint: " + text, "    ")
        for line in printed.splitlines():
            assert line.count("`") % 2 == 0, (lang, printed)
        # ... and nothing is lost: the code is there, whole.
        for code in CODE.findall(text):
            assert code in printed, (code, printed)


@pytest.mark.parametrize(
    "text",
    [
        "divide by `keys.shape[-1] ** 0.5` and then by `torch.sqrt(torch.tensor(head_dim, dtype=torch.float32))`.",
        "在 softmax 之前把对角线以上的分数填成 `-torch.inf`，即 `attn_scores.masked_fill(mask, -torch.inf)`。",
        "x " * 30 + "`a b c d e f`",
    ],
)
def test_wrapping_keeps_code_whole_where_it_would_have_broken(text: str) -> None:
    printed = wrap("  Hint: " + text, "    ", width=40)
    assert all(line.count("`") % 2 == 0 for line in printed.splitlines()), printed
    assert all(code in printed for code in CODE.findall(text)), printed


@pytest.mark.parametrize("width", range(20, 44))
def test_a_short_expression_inside_chinese_stays_on_one_line(width: int) -> None:
    """The review of 2026-11-26 (E-6) found ``t1 !=`` at the end of a line and ``t2`` on the next."""
    printed = wrap("✗ 交叉注意力：形状不同的输入都试过，且 t1 != t2 时结果不对。", "  ", width=width)
    assert any("t1 != t2" in line for line in printed.splitlines()), printed
    # English, and a Latin phrase inside Chinese, still break between words.
    english = wrap("✗ " + "the answer and the library disagree " * 3, "  ", width=width)
    assert max(len(line) for line in english.splitlines()) <= width, english
    phrase = wrap("提示：" + "scores are scaled by the square root of d " * 2 + "。", "  ", width=width)
    assert max(len(line) for line in phrase.splitlines()) <= width, phrase
