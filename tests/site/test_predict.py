"""Predict-then-reveal in the built site and a real browser: each predict exercise's question is a form with its
choices, answered with the mouse, the keyboard or a finger; the reader reads the explanation of the choice they
picked, in their language; their answers stay in their browser, shared by both languages, and the chapter counts
the first tries that were right. (That the right choice is attention_lib's: tests/pages/test_predictions.py.)
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools.pages import predictions

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = tuple(site_config.notebook_chapters())
LANGUAGES = {"en": "", "zh": "zh/"}
WORDS = {lang: site_config.extra(lang)["interactive"]["predict"] for lang in LANGUAGES}
#: What the questions may add to a page that asks them, compressed: script, stylesheet and markup.
BUDGET_KB = 12
FORM = re.compile(r'<form class="predict" data-predict="(?P<id>[\w-]+)" data-answer="(?P<answer>\d+)".*?</form>', re.S)


def _asked(lang: str) -> dict[str, list]:
    """Each chapter's questions, from its Markdown."""
    found = {}
    for page in CHAPTERS:
        text = (ROOT / "docs" / lang / f"{page}.md").read_text(encoding="utf-8")
        if asked := predictions(text):
            found[page] = asked
    return found


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_question_is_a_form_with_its_choices_and_hidden_explanations(site: Path, lang: str) -> None:
    asked = _asked(lang)
    assert asked
    for page, questions in asked.items():
        html = (site / LANGUAGES[lang] / page / "index.html").read_text(encoding="utf-8")
        forms = list(FORM.finditer(html))
        assert [(m["id"], int(m["answer"])) for m in forms] == [(q.id, q.answer + 1) for q in questions], page
        for form, question in zip(forms, questions, strict=True):
            radios = re.findall(r'<input type="radio" name="([\w-]+)" value="(\d+)">', form[0])
            assert radios == [(question.id, str(n)) for n in range(1, len(question.choices) + 1)], page
            explanations = re.findall(r'<div class="pr-why" data-choice="(\d+)" hidden>', form[0])
            assert explanations == [str(n) for n in range(1, len(question.choices) + 1)], page
            assert 'data-pagefind-ignore="all"' in form[0]  # no search excerpt gives an answer away
            assert "<legend>" in form[0]
        # One script, after the last form; the chapter's count under its Exercises heading.
        assert html.count("/predict.js") == 1
        assert html.index("/predict.js") > forms[-1].end()
        assert re.search(r'<h2 id="exercises".*?</h2>\n<p class="pr-summary" data-predict-summary hidden>', html, re.S)
        assert "/predict.css" in html
    # A page without a question loads neither the script nor the stylesheet.
    glossary = (site / LANGUAGES[lang] / "glossary" / "index.html").read_text(encoding="utf-8")
    assert "predict.js" not in glossary
    assert "predict.css" not in glossary


def test_the_questions_weigh_little(site: Path) -> None:
    def compressed(data: bytes) -> int:
        return len(gzip.compress(data, compresslevel=6))

    shipped = sum(
        compressed((site / "assets" / folder / name).read_bytes())
        for folder, name in (("javascripts", "predict.js"), ("stylesheets", "predict.css"))
    )
    for lang, prefix in LANGUAGES.items():
        for page in _asked(lang):
            html = (site / prefix / page / "index.html").read_text(encoding="utf-8")
            # The markup the forms add: the page with them against the page without any of them.
            added = shipped + compressed(html.encode()) - compressed(FORM.sub("", html).encode())
            assert added <= BUDGET_KB * 1024, f"{prefix}{page}: the questions add {added / 1024:.1f} KB"


#: A form as a reader finds it before answering, or after "Forget my answer" (``_state``).
UNANSWERED = {"state": "open", "chosen": None, "verdict": "", "shown": [], "checked": None, "forget": False}


def _form(tab, id: str):
    return tab.locator(f'form[data-predict="{id}"]')


def _state(form) -> dict:
    return form.evaluate(
        """form => ({
          state: form.dataset.state, chosen: form.dataset.chosen ?? null,
          verdict: form.querySelector('.pr-verdict').textContent,
          shown: [...form.querySelectorAll('.pr-why')].filter(w => !w.hidden).map(w => w.dataset.choice),
          checked: form.querySelector('input:checked')?.value ?? null,
          forget: !form.querySelector('.pr-forget').hidden,
        })"""
    )


def _summary(tab) -> dict:
    return tab.locator("[data-predict-summary]").evaluate(
        "s => ({hidden: s.hidden, text: s.textContent, right: s.dataset.right, answered: s.dataset.answered,"
        " total: s.dataset.total})"
    )


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_reader_picks_checks_reads_why_and_the_chapter_counts_first_tries(page, load, base_url, lang) -> None:
    words = WORDS[lang]
    chapter = "attention-scores"
    (question,) = _asked(lang)[chapter]
    right, wrong = str(question.answer + 1), "1" if question.answer else "2"
    load(page, f"{base_url}{LANGUAGES[lang]}{chapter}/")
    form = _form(page, question.id)
    assert _state(form) == UNANSWERED
    assert form.locator(".pr-check").text_content() == words["check"]
    assert _summary(page)["hidden"]
    # Check without a choice: asked to pick one.
    form.locator(".pr-check").click()
    assert _state(form)["verdict"] == words["pick"]
    # A wrong choice: its own explanation, no other.
    form.locator(f'input[value="{wrong}"]').check()
    form.locator(".pr-check").click()
    state = _state(form)
    assert (state["state"], state["chosen"], state["shown"]) == ("wrong", wrong, [wrong])
    assert state["verdict"] == f"\u2717 {words['wrong']}"
    shown = form.locator(f'.pr-why[data-choice="{wrong}"]').inner_text()
    assert shown.strip()
    assert shown.strip()[:20] in question.choices[int(wrong) - 1].why.replace("*", "")
    summary = _summary(page)
    assert (summary["hidden"], summary["right"], summary["answered"], summary["total"]) == (False, "0", "1", "1")
    assert summary["text"].startswith(words["summary"].format(right=0, total=1))
    # Picking another choice clears the verdict until that one is checked.
    form.locator(f'input[value="{right}"]').check()
    assert _state(form)["verdict"] == ""
    assert _state(form)["shown"] == []
    form.locator(".pr-check").click()
    state = _state(form)
    assert (state["state"], state["shown"], state["verdict"]) == ("right", [right], f"\u2713 {words['right']}")
    assert _summary(page)["right"] == "0"  # the first try counts
    # Kept in this browser: after a reload, and in the other language.
    load(page, f"{base_url}{LANGUAGES[lang]}{chapter}/")
    assert _state(form)["checked"] == right
    assert _state(form)["state"] == "right"
    assert _summary(page)["right"] == "0"
    other = next(prefix for code, prefix in LANGUAGES.items() if code != lang)
    load(page, f"{base_url}{other}{chapter}/")
    assert _state(form)["checked"] == right
    assert _summary(page)["answered"] == "1"
    # Forgotten, then answered right at the first try.
    form.locator(".pr-forget").click()
    assert _state(form) == UNANSWERED
    assert _summary(page)["hidden"]
    form.locator(f'input[value="{right}"]').check()
    form.locator(".pr-check").click()
    assert _summary(page)["right"] == "1"
    stored = json.loads(page.evaluate("localStorage.getItem('attention-docs:predictions')"))
    assert stored == {question.id: {"first": right, "last": right}}


def test_the_count_adds_the_chapters_questions(page, load, base_url) -> None:
    """A chapter with two questions: one right, one wrong at the first try; the count says 1 of 2."""
    chapter, (first, second) = next((c, qs) for c, qs in _asked("en").items() if len(qs) == 2)
    load(page, f"{base_url}{chapter}/")
    for question, pick in ((first, first.answer + 1), (second, 1 if second.answer else 2)):
        form = _form(page, question.id)
        form.locator(f'input[value="{pick}"]').check()
        form.locator(".pr-check").click()
    summary = _summary(page)
    assert (summary["right"], summary["answered"], summary["total"]) == ("1", "2", "2")
    assert WORDS["en"]["unanswered"].format(left=0) not in summary["text"]


def test_without_storage_the_questions_still_answer(browser, base_url) -> None:
    """A browser that refuses storage (some private modes): the reader still gets the verdict, and predict.js
    throws nothing (Material's own scripts do, reading their settings)."""
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.add_init_script(
            "Object.defineProperty(window, 'localStorage', {get() { throw new DOMException('denied'); }})"
        )
        errors = []
        tab.on("pageerror", lambda error: errors.append(error.stack or str(error)))
        tab.goto(f"{base_url}attention-scores/", wait_until="load")
        (question,) = _asked("en")["attention-scores"]
        form = _form(tab, question.id)
        form.locator(f'input[value="{question.answer + 1}"]').check()
        form.locator(".pr-check").click()
        assert _state(form)["state"] == "right"
        assert tab.evaluate("(() => { try { return !localStorage; } catch { return true; } })()")  # refused indeed
        assert [error for error in errors if "predict.js" in error] == []
    finally:
        context.close()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_keyboard_answers_a_question(page, load, base_url, lang) -> None:
    chapter = "attention-scores"
    (question,) = _asked(lang)[chapter]
    load(page, f"{base_url}{LANGUAGES[lang]}{chapter}/")
    form = _form(page, question.id)
    form.locator("input").first.focus()
    # Arrow keys move the choice within the group (and pick it), Tab goes on to the button, Enter checks.
    for _ in range(question.answer):
        page.keyboard.press("ArrowDown")
    assert _state(form)["checked"] == str(question.answer + 1)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('pr-check')")
    ring = page.evaluate(
        "(s => ({width: parseFloat(s.outlineWidth), style: s.outlineStyle}))(getComputedStyle(document.activeElement))"
    )
    assert ring["width"] >= 2
    assert ring["style"] != "none"
    page.keyboard.press("Enter")
    assert _state(form)["state"] == "right"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('pr-forget')")
    page.keyboard.press("Space")
    assert _state(form)["state"] == "open"
    assert page.evaluate("document.activeElement.type") == "radio"  # back where the reader picks again
    # Every control has a name a screen reader reads: the radios their label, the buttons their text.
    names = form.locator("input, button").evaluate_all(
        "cs => cs.map(c => (c.labels && c.labels.length ? c.labels[0].textContent : c.textContent).trim())"
    )
    assert all(names[: len(question.choices) + 1]), names


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_finger_answers_on_a_phone_and_nothing_is_wider_than_it(browser, base_url, lang) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        tab = context.new_page()
        for chapter, questions in _asked(lang).items():
            tab.goto(f"{base_url}{LANGUAGES[lang]}{chapter}/", wait_until="load")
            assert tab.evaluate("document.documentElement.scrollWidth") <= 390, chapter
            for question in questions:
                form = _form(tab, question.id)
                box = form.bounding_box()
                assert 0 <= box["x"] <= box["x"] + box["width"] <= 390, f"{chapter}: {question.id}"
                targets = form.locator(".pr-choice, button:visible").evaluate_all(
                    "es => es.map(e => e.getBoundingClientRect().height)"
                )
                assert min(targets) >= 32, f"{chapter}: {question.id}: a target {min(targets)} px high"
        chapter = "attention-scores"
        tab.goto(f"{base_url}{LANGUAGES[lang]}{chapter}/", wait_until="load")
        (question,) = _asked(lang)[chapter]
        form = _form(tab, question.id)
        form.locator(".pr-choice").nth(question.answer).tap()
        form.locator(".pr-check").tap()
        assert _state(form)["state"] == "right"
    finally:
        context.close()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_verdicts_keep_their_contrast_and_axe_finds_nothing_serious_in_both_palettes(
    page, load, base_url, lang, dark_palette, axe_violations, text_contrasts
) -> None:
    chapter = "attention-scores"
    (question,) = _asked(lang)[chapter]
    load(page, f"{base_url}{LANGUAGES[lang]}{chapter}/")
    form = _form(page, question.id)
    seen = {}
    for pick, verdict in ((1 if question.answer else 2, "wrong"), (question.answer + 1, "right")):
        form.locator(f'input[value="{pick}"]').check()
        form.locator(".pr-check").click()
        assert _state(form)["state"] == verdict
        seen[("light", verdict)] = min(item["contrast"] for item in text_contrasts(form))
        assert axe_violations(page) == [], (lang, "light", verdict)
        with dark_palette(page):
            seen[("dark", verdict)] = min(item["contrast"] for item in text_contrasts(form))
            assert axe_violations(page) == [], (lang, "dark", verdict)
    assert min(seen.values()) >= 4.5, seen


@pytest.mark.parametrize("width", [1280, 390])
def test_a_stored_answer_is_shown_before_the_page_is_laid_out(page, load, base_url, width, largest_shift) -> None:
    """A reader who answered before arrives by a link to the question: their answer and its explanation are there
    at once, and nothing on the screen moves while the page loads."""
    (question,) = _asked("en")["attention-scores"]
    page.set_viewport_size({"width": width, "height": 844})
    load(page, f"{base_url}glossary/")  # the site's origin, to store in
    wrong = "1" if question.answer else "2"
    page.evaluate(
        "([key, id, choice]) => localStorage.setItem(key, JSON.stringify({[id]: {first: choice, last: choice}}))",
        ["attention-docs:predictions", question.id, wrong],
    )
    load(page, f"{base_url}attention-scores/#{question.id}")
    form = _form(page, question.id)
    assert _state(form)["shown"] == [wrong]
    assert form.is_visible()
    assert form.locator(f'.pr-why[data-choice="{wrong}"]').is_visible()
    assert largest_shift(page) <= 2
