"""Keep the translations in step with the English pages, section by section.

    python3 dev.py translations                      # every page's state, and each outdated section's English diff
    python3 dev.py translations diff zh/masks.md     # what changed in English in the page's outdated sections
    python3 dev.py translations check [zh/masks.md]  # the structure checks, with how to fix each problem
    python3 dev.py translations update zh/masks.md   # record that the page now translates the English one
    python3 dev.py translations update zh/masks.md#setup             # ... or just one of its sections
    python3 dev.py translations no-translation-needed en/masks.md    # an English fix (a typo) leaves them current
    python3 dev.py translations review zh/masks.md --by NAME         # a second person has reviewed the page
    python3 dev.py translations diff zh/messages.toml    # the same for the exercise checker's messages
    python3 dev.py translations add-language fr --name Français   # start a new language

English (``docs/en/``) is the source; every other language folder holds translations of its pages under
the same file names. The freshness records, sections and states: ``docs_tools/records.py``; the structure
checks: ``docs_tools/translation_checks.py``. ``hooks/translations.py`` puts the same states on the site: a
banner naming the outdated sections, and the table of the translation status page.

What a command says about a translated page is in the page's language where the tooling speaks it
(``docs_tools/translation_messages.py``), for its translator; the status table of every language at once,
the English writer's no-translation-needed and the pull request's notices and summary are in English.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import html
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from docs_tools.config import SOURCE, Language, languages
from docs_tools.project import ROOT
from docs_tools.records import (
    MESSAGES,
    MISSING,
    OUTDATED,
    REVIEWED_KEY,
    SECTIONS_KEY,
    UP_TO_DATE,
    FrontMatterError,
    PageState,
    Section,
    messages_state,
    page_state,
    page_states,
    pages,
    paths,
    read_record,
    read_sections,
    sections,
    source_hash,
    split_page,
    text_hash,
    translated_text,
    with_front_matter,
    with_record,
    write,
)
from docs_tools.translation_checks import check, check_page
from docs_tools.translation_messages import say

#: Where add-language puts a new language in mkdocs.yml: right after the last configured one.
LANGUAGE_MARK = "# python3 dev.py translations add-language adds new languages above this line"


def git(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, encoding="utf-8")


def _split(item: str) -> tuple[str, str, str | None]:
    """``zh/masks.md#setup`` -> (``zh``, ``masks.md``, ``setup``); no ``#`` -> section None."""
    item, _, section = item.partition("#")
    return (*split_page(item), section or None)


def _cell(page_state_: PageState) -> str:
    if page_state_.state == MISSING:
        return MISSING
    cell = f"{page_state_.state} {page_state_.current}/{len(page_state_.sections)}"
    return cell + (" reviewed" if page_state_.reviewed_by else "")


# ---------------------------------------------------------------------------------------------------
# What changed: each outdated section against the English text it was translated from
# ---------------------------------------------------------------------------------------------------


def _english_history(page: str, root: Path) -> Iterator[str]:
    """The English page as committed, newest first: HEAD's version, then each earlier one, under the names it
    had (a renamed page keeps its history)."""
    path = f"docs/{SOURCE}/{page}"
    log = git("log", "--follow", "--name-only", "--format=%x00%H", "--", path, root=root)
    for entry in log.stdout.split("\0")[1:] if log.returncode == 0 else []:
        revision, *names = entry.split()
        shown = git("show", f"{revision}:{names[-1] if names else path}", root=root)
        if shown.returncode == 0:
            yield shown.stdout


def translated_from(page: str, hashes: Iterable[str], root: Path = ROOT) -> dict[str, Section]:
    """``{hash: the English section with that text}`` for each recorded hash, found in the English page's
    history (a section keeps its hash whatever else changes on the page, and if its id changes)."""
    wanted, found = set(hashes), {}
    for text in _english_history(page, root):
        for section in sections(text):
            if section.hash in wanted:
                found[section.hash] = section
                wanted.discard(section.hash)
        if not wanted:
            break
    return found


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text``, for Markdown that shows it."""
    return "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))


def _diff(before: str, after: str, before_name: str, after_name: str) -> str:
    """A unified diff of two sections' texts (an empty ``before`` for a section that is new)."""
    old, new = [(text.rstrip("\n") + "\n").splitlines(keepends=True) if text else [] for text in (before, after)]
    return "".join(difflib.unified_diff(old, new, before_name, after_name))


def _label(section_id: str, lang: str = SOURCE) -> str:
    return f"#{section_id}" if section_id else say(lang, "words.before_title")


def _renamed(recorded: dict[str, str], english: list[Section]) -> dict[str, str]:
    """{new id: old id} for the sections whose id changed in English: a recorded id English lost, at the place of
    an English id the record lacks."""
    old_ids, new_ids = list(recorded), [section.id for section in english]
    pairs = {}
    matcher = difflib.SequenceMatcher(a=old_ids, b=new_ids, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "replace":
            for old_id, new_id in zip(old_ids[a1:a2], new_ids[b1:b2], strict=False):
                if old_id not in new_ids and new_id not in recorded:
                    pairs[new_id] = old_id
    return pairs


def section_diffs(
    locale: str, page: str, root: Path = ROOT, only: str | None = None, lang: str | None = None
) -> list[tuple[Section, str]]:
    """(English section, what changed in it since it was translated) for each outdated section of
    ``docs/<locale>/<page>``, or for the section ``only``; the notes in ``lang``, by default the page's own
    (its translator reads them; a pull request's summary, for the English writer, asks for English)."""
    lang = lang or locale
    current = page_state(locale, page, root / "docs")
    recorded = read_sections(paths(locale, page, root)[1].read_text(encoding="utf-8")) or {}
    renamed = _renamed(recorded, current.sections)
    targets = [section for section in current.outdated if only is None or section.id == only]
    wanted = [recorded.get(section.id) or recorded.get(renamed.get(section.id, ""), "") for section in targets]
    old = translated_from(page, [hash_ for hash_ in wanted if hash_], root)
    english = f"docs/{SOURCE}/{page}"
    shown = []
    for section, hash_ in zip(targets, wanted, strict=True):
        if section.id:
            where = f"{english}#{section.id}"
        else:
            where = say(lang, "cli.untitled", english=english, label=_label(section.id, lang))
        before = old.get(hash_)
        note = ""
        if section.id in renamed:
            note = say(lang, "cli.renamed", where=where, old=renamed[section.id]) + "\n"
        if not hash_:
            note = say(lang, "cli.new_section", where=where) + "\n"
        elif before is None:
            shown.append(
                (section, say(lang, "cli.not_in_history", where=where, english=english, line=section.line) + "\n")
            )
            continue
        if section.id in current.moved:
            note += say(lang, "cli.moved", where=where) + "\n"
        before_name, after_name = say(lang, "cli.as_translated", where=where), say(lang, "cli.now", where=where)
        shown.append((section, note + _diff(before.text if before else "", section.text, before_name, after_name)))
    return shown


def print_diff(item: str, root: Path = ROOT) -> int:
    locale, page, only = _split(item)
    english, translation = paths(locale, page, root)
    shown_en, shown = english.relative_to(root).as_posix(), translation.relative_to(root).as_posix()
    if not translation.exists():
        print(say(locale, "cli.diff_no_translation", shown=shown, shown_en=shown_en))
        return 1
    if page == MESSAGES:
        return _print_messages_diff(english, translation, shown_en, shown, root, locale)
    current = page_state(locale, page, root / "docs")
    if only is not None and only not in {section.id for section in current.sections}:
        ids = say(locale, "words.list_separator").join(section.id for section in current.sections)
        print(say(locale, "cli.no_section", shown_en=shown_en, section=only, ids=ids))
        return 1
    diffs = section_diffs(locale, page, root, only)
    if not diffs and not (current.removed and only is None):
        if only:
            print(say(locale, "cli.section_up_to_date", section=only, shown=shown))
        else:
            print(say(locale, "cli.page_up_to_date", shown=shown))
        return 0
    for _, diff in diffs:
        sys.stdout.write(diff + "\n")
    for removed in current.removed if only is None else []:
        print(say(locale, "cli.removed_section", shown=shown, section=removed, shown_en=shown_en) + "\n")
    return 0


def _print_messages_diff(english: Path, translation: Path, shown_en: str, shown: str, root: Path, lang: str) -> int:
    recorded = read_record(translation.read_text(encoding="utf-8"))
    current = english.read_text(encoding="utf-8").replace("\r\n", "\n")
    if recorded == source_hash(current):
        print(say(lang, "cli.messages_up_to_date", shown=shown, shown_en=shown_en))
        return 0
    old = git("cat-file", "blob", recorded, root=root) if recorded else None
    if old is None or old.returncode != 0:
        print(say(lang, "cli.messages_not_in_history", shown=shown, recorded=recorded or say(lang, "words.no_record")))
        return 1
    sys.stdout.writelines(
        difflib.unified_diff(
            old.stdout.splitlines(keepends=True),
            current.splitlines(keepends=True),
            say(lang, "cli.as_translated", where=shown_en),
            say(lang, "cli.now", where=shown_en),
        )
    )
    return 0


# ---------------------------------------------------------------------------------------------------
# The status
# ---------------------------------------------------------------------------------------------------


def print_status(root: Path = ROOT, *, diffs: bool = True) -> int:
    table = page_states(root)
    locales = languages(root)
    width = max(len(page) for page in table) + 2
    print(f"{'page':<{width}}" + "".join(f"{language.locale:<28}" for language in locales))
    for page, states in table.items():
        print(f"{page:<{width}}" + "".join(f"{_cell(states[language.locale]):<28}" for language in locales))
    # The exercise checker's messages, a translated file like a page (docs_tools/records.py).
    print(f"{MESSAGES:<{width}}" + "".join(f"{messages_state(language.locale, root):<28}" for language in locales))
    print("\n(N/M: N of the page's M sections current; reviewed: a second person has reviewed it as it reads now)")
    # Below the table, each language's details, in that language: what its translators act on.
    for language in locales:
        locale = language.locale
        counts = collections.Counter(states[locale].state for states in table.values())
        reviewed = sum(bool(states[locale].reviewed_by) for states in table.values())
        summary = say(
            locale,
            "cli.language_summary",
            name=language.name,
            locale=locale,
            up_to_date=counts[UP_TO_DATE],
            outdated=counts[OUTDATED],
            missing=counts[MISSING],
            reviewed=reviewed,
        )
        print("\n" + summary)
        separator = say(locale, "words.list_separator")
        for page, states in table.items():
            if states[locale].state != OUTDATED:
                continue
            item = f"{locale}/{page}"
            outdated = [_label(section.id, locale) for section in states[locale].outdated]
            ids = separator.join(outdated) or say(locale, "words.list_none")
            print("\n  " + say(locale, "cli.outdated_sections", item=item, ids=ids))
            if states[locale].removed:
                gone = separator.join(_label(key, locale) for key in states[locale].removed)
                print("  " + say(locale, "cli.removed_sections", item=item, ids=gone))
            if diffs:
                for _, diff in section_diffs(locale, page, root):
                    print("    " + diff.rstrip("\n").replace("\n", "\n    "))
            print("  " + say(locale, "cli.when_translated", item=item))
        messages = messages_state(locale, root)
        item = f"{locale}/{MESSAGES}"
        print("\n  " + say(locale, "cli.messages_state", item=item, state=_state(messages, locale)))
        if messages == OUTDATED:
            print("  " + say(locale, "cli.see_changes", item=item))
    return 0


def _state(state: str, lang: str) -> str:
    """A state (``records.UP_TO_DATE``, ``OUTDATED``, ``MISSING``) in words of ``lang``."""
    return say(lang, f"states.{state.replace(' ', '_')}")


# ---------------------------------------------------------------------------------------------------
# Changing the records
# ---------------------------------------------------------------------------------------------------


def update(items: list[str], root: Path = ROOT) -> int:
    """Record that each page (or section, ``zh/masks.md#setup``) now translates the current English text,
    once its structure checks pass."""
    failed = False
    for item in items:
        locale, page, only = _split(item)
        english, translation = paths(locale, page, root)
        shown_en, shown = english.relative_to(root).as_posix(), translation.relative_to(root).as_posix()
        if not translation.exists():
            print(say(locale, "cli.update_no_translation", shown=shown, shown_en=shown_en))
            failed = True
            continue
        text = translation.read_text(encoding="utf-8")
        source = sections(english.read_text(encoding="utf-8")) if page != MESSAGES else []
        if (
            page != MESSAGES
            and only is not None
            and only not in {s.id for s in source} & {s.id for s in sections(text)}
        ):
            print(say(locale, "cli.update_no_section", shown=shown, section=only, shown_en=shown_en))
            failed = True
            continue
        # The whole page as the translator now vouches for it, or the one section.
        problems = [
            problem
            for problem in check_page(locale, page, root, strict=only is None, section=only)
            if problem.kind not in ("record_missing", "messages_record")  # what this command writes
        ]
        if problems:
            print(*problems, sep="\n")
            print(say(locale, "cli.not_recorded", count=len(problems), shown=shown))
            failed = True
            continue
        if page == MESSAGES:
            hash_ = source_hash(english.read_text(encoding="utf-8"))
            write(translation, with_record(text, hash_))
            print(say(locale, "cli.messages_recorded", shown=shown, shown_en=shown_en, hash=hash_[:12]))
            continue
        recorded = read_sections(text) or {}
        if only is None:
            recorded = {section.id: section.hash for section in source}
        else:
            recorded[only] = next(section.hash for section in source if section.id == only)
            # In the English order; a record of a section neither page has any more (a renamed id) goes.
            order = [section.id for section in source]
            here = {section.id for section in sections(text)}
            recorded = {key: value for key, value in recorded.items() if key in order or key in here}
            recorded = dict(sorted(recorded.items(), key=lambda item: order.index(item[0]) if item[0] in order else 0))
        write(translation, with_front_matter(text, SECTIONS_KEY, recorded))
        now = page_state(locale, page, root / "docs")
        what = say(locale, "words.one_section", section=only) if only else say(locale, "words.every_section")
        if now.state == UP_TO_DATE:
            state = say(locale, "words.all_current")
        else:
            state = say(locale, "words.some_current", current=now.current, total=len(now.sections))
        print(say(locale, "cli.recorded", shown=shown, what=what, shown_en=shown_en, state=state))
    return 1 if failed else 0


def no_translation_needed(items: list[str], since: str, root: Path = ROOT) -> int:
    """An English change that needs no translation (a typo, a link): every translated section that was current
    at ``since`` and whose English text this change touched records the new English text. The translations'
    text is not touched; sections that were outdated already stay outdated."""
    if git("rev-parse", "--verify", "--quiet", f"{since}^{{commit}}", root=root).returncode != 0:
        print(f"--since {since}: not a commit in this repository (try main, or HEAD~1).")
        return 2
    failed = False
    for item in items:
        item, _, only = item.partition("#")
        page = item.replace("\\", "/").removeprefix("docs/").removeprefix(f"{SOURCE}/")
        english = root / "docs" / SOURCE / page
        shown_en = f"docs/{SOURCE}/{page}"
        before = git("show", f"{since}:{shown_en}", root=root)
        if not english.exists() or before.returncode != 0:
            print(f"{shown_en}: not an English page both at {since} and now.")
            failed = True
            continue
        old = {section.id: section.hash for section in sections(before.stdout)}
        now = sections(english.read_text(encoding="utf-8"))
        if only and only not in {section.id for section in now}:
            print(f"{shown_en} has no section {only!r}. Its sections: {', '.join(s.id for s in now)}")
            failed = True
            continue
        wanted = [section for section in now if only in ("", section.id)]
        changed = [section for section in wanted if section.id in old and old[section.id] != section.hash]
        new = [section.id for section in wanted if section.id not in old]
        if new:
            print(
                f"{shown_en}: {', '.join(map(_label, new))} new (or renamed) since {since}: a translation must follow."
            )
        if not changed:
            if not new:
                print(
                    f"{shown_en}: no section{' ' + only if only else ''} differs from {since}. Run this before"
                    " committing the change, or name the commit before it: --since main"
                )
            failed = True
            continue
        translated = [language for language in languages(root) if (root / "docs" / language.locale / page).exists()]
        if not translated:
            print(f"{shown_en}: no translation of this page exists yet: there is no record to move.")
        for language in translated:
            translation = root / "docs" / language.locale / page
            text = translation.read_text(encoding="utf-8")
            recorded = read_sections(text) or {}
            current = [section.id for section in changed if recorded.get(section.id) == section.hash]
            moved = [section for section in changed if recorded.get(section.id) == old[section.id]]
            stale = [s.id for s in changed if s not in moved and s.id not in current]
            if moved:
                recorded.update({section.id: section.hash for section in moved})
                write(translation, with_front_matter(text, SECTIONS_KEY, recorded))
            shown = f"docs/{language.locale}/{page}"
            if moved:
                ids = ", ".join(_label(section.id) for section in moved)
                print(f"{shown}: {ids} still current (this change needs no translation).")
            if current:
                print(f"{shown}: {', '.join(map(_label, current))} current already: nothing to record.")
            if stale:
                ids = ", ".join(map(_label, stale))
                print(f"{shown}: {ids} outdated before this change already: left for a translator.")
    return 1 if failed else 0


def review(item: str, by: str, root: Path = ROOT) -> int:
    """Mark a translation reviewed by ``by``, as it reads now; any later edit of its text undoes the mark."""
    locale, page = split_page(item)
    translation = paths(locale, page, root)[1]
    shown = translation.relative_to(root).as_posix()
    if page == MESSAGES or not translation.exists():
        print(say(locale, "cli.review_not_a_page", shown=shown, locale=locale))
        return 1
    if not re.fullmatch(r"[\w.-]+", by):
        print(say(locale, "cli.review_by", by=by))
        return 2
    if page_state(locale, page, root / "docs").state != UP_TO_DATE:
        print(say(locale, "cli.review_outdated", shown=shown))
        return 1
    problems = check_page(locale, page, root, strict=True)
    if problems:
        print(*problems, sep="\n")
        print(say(locale, "cli.not_marked", count=len(problems), shown=shown))
        return 1
    text = translation.read_text(encoding="utf-8")
    mark = {"by": by, "translation": text_hash(translated_text(text))}
    write(translation, with_front_matter(text, REVIEWED_KEY, mark))
    print(say(locale, "cli.reviewed", shown=shown, by=by))
    return 0


def run_checks(items: list[str], root: Path = ROOT) -> int:
    pages_ = [item.partition("#")[0] for item in items]
    problems = check(root, pages_)
    # The closing line in the pages' language where every named page has the same one; English otherwise.
    named = {split_page(item)[0] for item in pages_}
    lang = named.pop() if len(named) == 1 else SOURCE
    if problems:
        print(*problems, sep="\n")
        print("\n" + say(lang, "cli.problems", count=len(problems)))
        return 1
    print(say(lang, "cli.passed"))
    return 0


# ---------------------------------------------------------------------------------------------------
# Pull requests
# ---------------------------------------------------------------------------------------------------


def _sections_at(revision: str, path: str, root: Path) -> dict[str, Section] | None:
    shown = git("show", f"{revision}:{path}", root=root)
    return {section.id: section for section in sections(shown.stdout)} if shown.returncode == 0 else None


@dataclass
class _Change:
    """What a pull request did to one translation."""

    name: str  #: the language's name
    locale: str
    page: str
    diffs: list[tuple[Section, str]]  #: the sections it makes (or leaves) outdated, each with its English diff
    already: set[str]  #: of those, the ids outdated before the pull request already
    removed: list[str]  #: the ids it removed from English that the translation still has
    marked: list[tuple[Section, str]]  #: the sections marked as needing no translation, with the English change


def _change(page: str, base: str, language: Language, root: Path) -> _Change | None:
    english = root / "docs" / SOURCE / page
    translation = root / "docs" / language.locale / page
    if english.suffix != ".md" or not english.exists() or not translation.exists():
        return None
    before = _sections_at(base, f"docs/{SOURCE}/{page}", root) or {}
    now = sections(english.read_text("utf-8"))
    touched = {s.id for s in now if getattr(before.get(s.id), "hash", "") != s.hash}
    state = page_state(language.locale, page, root / "docs")
    stale = {s.id for s in state.outdated} & (touched | set(state.moved))
    diffs = [diff for diff in section_diffs(language.locale, page, root, lang=SOURCE) if diff[0].id in stale]
    shown = git("show", f"{base}:docs/{language.locale}/{page}", root=root)  # the translation at the base
    translated_before = shown.stdout if shown.returncode == 0 else ""
    recorded_before = read_sections(translated_before) or {}
    already = {key for key in stale if key in before and recorded_before.get(key) != before[key].hash}
    removed = [key for key in state.removed if key in before]
    tr_before = {section.id: section for section in sections(translated_before)} if translated_before else {}
    tr_now = {section.id: section for section in sections(translation.read_text("utf-8"))}
    outdated = {section.id for section in state.outdated}
    marked = []  # touched in English, current in the record, the translation's text the same as at the base
    for section in now:
        key = section.id
        unchanged_here = key in tr_before and key in tr_now and tr_before[key].text == tr_now[key].text
        if key in touched and key in before and key not in outdated and unchanged_here:
            where = f"docs/{SOURCE}/{page}#{key}"
            marked.append((section, _diff(before[key].text, section.text, f"{where} (before)", f"{where} (now)")))
    if not diffs and not removed and not marked:
        return None
    return _Change(language.name, language.locale, page, diffs, already, removed, marked)


def github_notices(base: str, root: Path = ROOT) -> int:
    """GitHub Actions notices, and the job summary, for what a change (from its merge base with ``base`` to
    HEAD) did to the translations: the sections it makes outdated, each with its English diff, the sections it
    removed, and those it marked as needing no translation; never fails."""
    found = git("merge-base", base, "HEAD", root=root)
    start = found.stdout.strip() if found.returncode == 0 else base
    changed = git("diff", "--name-only", f"{start}..HEAD", "--", f"docs/{SOURCE}/", root=root)
    if changed.returncode != 0:
        print(f"::warning title=Translation status::could not compare with {base}: {changed.stderr.strip()}")
        return 0
    pages_ = sorted(path.removeprefix(f"docs/{SOURCE}/") for path in changed.stdout.split())
    changes = [c for page in pages_ for language in languages(root) if (c := _change(page, start, language, root))]
    for change in changes:
        where, english = f"docs/{change.locale}/{change.page}", f"docs/{SOURCE}/{change.page}"
        if change.diffs or change.removed:
            ids = ", ".join(_label(section.id) for section, _ in change.diffs)
            gone = f"; it still has {', '.join(map(_label, change.removed))}, which English no longer has" * bool(
                change.removed
            )
            print(
                f"::notice file={where},title=Translation now outdated::This pull request changes {english}, so"
                f" {len(change.diffs)} section(s) of its {change.name} translation {where} are outdated"
                f" ({ids or 'none'}){gone}; the site's banner names them. Not an error: a translator can update"
                f" them later, or you can now (python3 dev.py translations diff {change.locale}/{change.page})."
                f" A typo fix that needs no translation: python3 dev.py translations no-translation-needed"
                f" {english} --since <the base branch>."
            )
        if change.marked:
            print(
                f"::notice file={where},title=No translation needed::This pull request changes"
                f" {', '.join(_label(s.id) for s, _ in change.marked)} in English and records that the"
                f" {change.name} translation needs no change there."
            )
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(_summary(changes))
    if not any(change.diffs or change.removed for change in changes):
        print("No translation became outdated.")
    return 0


def _title(section: Section) -> str:
    """A heading's text for the job summary's HTML: escaped, with its `code` spans."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(section.title or _label(section.id)))


def _details(section: Section, diff: str, note: str = "") -> list[str]:
    fence = _fence(diff)
    summary = f"<details><summary>{html.escape(_label(section.id))}: {_title(section)}{note}</summary>"
    return [summary, "", f"{fence}diff", diff.rstrip("\n"), fence, "", "</details>", ""]


def _summary(changes: list[_Change]) -> str:
    """The job summary: every section this pull request made outdated or marked, with its diff, folded."""
    outdated = [change for change in changes if change.diffs or change.removed]
    marked = [change for change in changes if change.marked]
    if not outdated and not marked:
        return "### Translations\n\nNo translation became outdated.\n"
    lines = []
    if outdated:
        lines += ["### Translations this pull request makes outdated", ""]
        lines += ["Not an error: each section below shows its English change since it was translated.", ""]
    for change in outdated:
        lines += [f"#### docs/{change.locale}/{change.page} ({change.name}): {len(change.diffs)} section(s)", ""]
        for section, diff in change.diffs:
            already = " (outdated before this pull request already)" if section.id in change.already else ""
            lines += _details(section, diff, already)
        if change.removed:
            gone = ", ".join(f"`{_label(key)}`" for key in change.removed)
            lines += [f"Removed from the English page, still in the translation: {gone}.", ""]
        lines += [f"Update them: `python3 dev.py translations diff {change.locale}/{change.page}`, translate, then"]
        lines += [f"`python3 dev.py translations update {change.locale}/{change.page}`.", ""]
    if marked:
        lines += ["### Marked as needing no translation", ""]
        lines += ["The English change of each section below leaves its translation current: check that it is so.", ""]
    for change in marked:
        lines += [f"#### docs/{change.locale}/{change.page} ({change.name})", ""]
        for section, diff in change.marked:
            lines += _details(section, diff)
    return "\n".join(lines) + "\n"


def add_language(locale: str, name: str, root: Path = ROOT) -> int:
    """Configure a new translation language in mkdocs.yml; every page starts missing (shown in English)."""
    if not re.fullmatch(r"[a-z]{2,3}(?:_[A-Z]{2})?", locale):
        print(f"translations: locale {locale!r}: expected a language code such as fr, ja or pt_BR")
        return 2
    if locale == SOURCE or locale in {language.locale for language in languages(root)}:
        print(f"translations: {locale} is already configured in mkdocs.yml")
        return 2
    path = root / "mkdocs.yml"
    text = path.read_text(encoding="utf-8")
    mark = text.find(LANGUAGE_MARK)
    if mark == -1:
        print(f"translations: mkdocs.yml lacks the line {LANGUAGE_MARK!r}")
        return 2
    line_start = text.rfind("\n", 0, mark) + 1
    indent = text[line_start:mark]
    entry = (
        f"- locale: {locale}\n"
        f"  name: {name}\n"
        "  build: true\n"
        "  # Add nav_translations (see zh above), and extra.translation: the banner and status page text.\n"
    )
    text = text[:line_start] + "".join(indent + line + "\n" for line in entry.splitlines()) + text[line_start:]
    path.write_text(text, encoding="utf-8", newline="\n")
    count = len(pages(root / "docs"))
    print(
        f"Added {name} ({locale}) to mkdocs.yml. All {count} pages are missing: the site shows them in English,"
        f" with a banner.\nTranslate a page by copying docs/{SOURCE}/<page> to docs/{locale}/<page>; then run"
        f" python3 dev.py translations update {locale}/<page>. See CONTRIBUTING.md, 'Adding a language'."
    )
    return 0


def main(argv: list[str], root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 dev.py translations",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command")
    status = commands.add_parser("status", help="every page's state and each outdated section's diff (the default)")
    status.add_argument("--brief", action="store_true", help="list the outdated sections without their diffs")
    status.add_argument("--github-base", metavar="REF", help="GitHub notices and summary for REF...HEAD's changes")
    diff = commands.add_parser("diff", help="what changed in English in a page's outdated sections")
    diff.add_argument("page", help="zh/masks.md, zh/masks.md#setup for one section, or zh/messages.toml")
    commands.add_parser("check", help="run the structure checks").add_argument("pages", nargs="*")
    record = commands.add_parser("update", help="record that pages (or sections) now translate the English")
    record.add_argument("pages", nargs="+", help="zh/masks.md, or zh/masks.md#setup for one section")
    unchanged = commands.add_parser(
        "no-translation-needed", help="an English change (a typo) that leaves the translated sections current"
    )
    unchanged.add_argument("pages", nargs="+", help="en/masks.md, or en/masks.md#setup for one section")
    unchanged.add_argument("--since", default="HEAD", help="the commit before the change (default: HEAD)")
    reviewed = commands.add_parser("review", help="mark a translation reviewed by a second person")
    reviewed.add_argument("page")
    reviewed.add_argument("--by", required=True, help="the reviewer's GitHub user name")
    new = commands.add_parser("add-language", help="configure a new language in mkdocs.yml")
    new.add_argument("locale")
    new.add_argument("--name", required=True, help="the language's own name, as the language menu shows it")
    args = parser.parse_args(argv)
    try:
        return _run(args, root)
    except FrontMatterError as error:  # a record a merge left conflicted: say which file, and how to mend it
        # diff and review name one page: its translator reads this, in its language.
        lang = split_page(args.page)[0] if args.command in ("diff", "review") else SOURCE
        what = say(lang, "front_matter.what", detail=error.detail)
        print(say(lang, "cli.front_matter", path=error.path, what=what) if error.path else f"translations: {what}")
        return 1


def _run(args: argparse.Namespace, root: Path) -> int:
    if args.command == "diff":
        return print_diff(args.page, root)
    if args.command == "check":
        return run_checks(args.pages, root)
    if args.command == "update":
        return update(args.pages, root)
    if args.command == "no-translation-needed":
        return no_translation_needed(args.pages, args.since, root)
    if args.command == "review":
        return review(args.page, args.by, root)
    if args.command == "add-language":
        return add_language(args.locale, args.name, root)
    if args.command == "status" and args.github_base:
        return github_notices(args.github_base, root)
    return print_status(root, diffs=not (args.command == "status" and args.brief))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
