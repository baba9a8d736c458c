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
"""

from __future__ import annotations

import argparse
import collections
import difflib
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from docs_tools.config import SOURCE, languages
from docs_tools.project import ROOT
from docs_tools.records import (
    MESSAGES,
    MISSING,
    OUTDATED,
    REVIEWED_KEY,
    SECTIONS_KEY,
    UP_TO_DATE,
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
)
from docs_tools.translation_checks import check, check_page

#: Where add-language puts a new language in mkdocs.yml: right after the last configured one.
LANGUAGE_MARK = "# python3 dev.py translations add-language adds new languages above this line"


def git(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
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
    """The English page as committed, newest first: HEAD's version, then each earlier one."""
    path = f"docs/{SOURCE}/{page}"
    log = git("log", "--format=%H", "--", path, root=root)
    for revision in log.stdout.split() if log.returncode == 0 else []:
        shown = git("show", f"{revision}:{path}", root=root)
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


def section_diffs(locale: str, page: str, root: Path = ROOT, only: str | None = None) -> list[tuple[Section, str]]:
    """(English section, what changed in it since it was translated) for each outdated section of
    ``docs/<locale>/<page>``, or for the section ``only``."""
    current = page_state(locale, page, root / "docs")
    recorded = read_sections(paths(locale, page, root)[1].read_text(encoding="utf-8")) or {}
    targets = [section for section in current.outdated if only is None or section.id == only]
    old = translated_from(page, (recorded[section.id] for section in targets if section.id in recorded), root)
    english = f"docs/{SOURCE}/{page}"
    shown = []
    for section in targets:
        where = f"{english}#{section.id}"
        before = old.get(recorded.get(section.id, ""))
        if section.id not in recorded:
            note = f"{where}: new in English since the page was translated; translate the whole section\n"
            before_text = ""
        elif before is None:
            shown.append(
                (
                    section,
                    f"{where}: changed since it was translated. The English text it was translated from is not"
                    " in this clone's history (a shallow clone needs `git fetch --unshallow`): compare the"
                    f" section with {english}:{section.line} as a whole.\n",
                )
            )
            continue
        else:
            note, before_text = "", before.text
        diff = difflib.unified_diff(
            (before_text.rstrip("\n") + "\n").splitlines(keepends=True) if before_text else [],
            (section.text.rstrip("\n") + "\n").splitlines(keepends=True),
            f"{where} (as translated)",
            f"{where} (now)",
        )
        shown.append((section, note + "".join(diff)))
    return shown


def print_diff(item: str, root: Path = ROOT) -> int:
    locale, page, only = _split(item)
    english, translation = paths(locale, page, root)
    shown_en, shown = english.relative_to(root).as_posix(), translation.relative_to(root).as_posix()
    if not translation.exists():
        print(f"{shown} does not exist yet: translate {shown_en} as a whole.")
        return 1
    if page == MESSAGES:
        return _print_messages_diff(english, translation, shown_en, shown, root)
    current = page_state(locale, page, root / "docs")
    if only is not None and only not in {section.id for section in current.sections}:
        ids = ", ".join(section.id for section in current.sections)
        print(f"{shown_en} has no section {only!r}. Its sections: {ids}")
        return 1
    diffs = section_diffs(locale, page, root, only)
    if not diffs and not (current.removed and only is None):
        what = f"section {only!r} of {shown}" if only else shown
        print(f"{what} is up to date: its English text has not changed since it was translated.")
        return 0
    for _, diff in diffs:
        sys.stdout.write(diff + "\n")
    for removed in current.removed if only is None else []:
        print(f"{shown}#{removed}: {shown_en} has no section {removed!r} any more: remove it (or use its new id).\n")
    return 0


def _print_messages_diff(english: Path, translation: Path, shown_en: str, shown: str, root: Path) -> int:
    recorded = read_record(translation.read_text(encoding="utf-8"))
    current = english.read_text(encoding="utf-8").replace("\r\n", "\n")
    if recorded == source_hash(current):
        print(f"{shown} is up to date: {shown_en} has not changed since it was translated.")
        return 0
    old = git("cat-file", "blob", recorded, root=root) if recorded else None
    if old is None or old.returncode != 0:
        print(
            f"The English text {shown} was translated from ({recorded or 'no record'}) is not in this"
            " clone's history (a shallow clone needs `git fetch --unshallow`). Compare the two files as a whole."
        )
        return 1
    sys.stdout.writelines(
        difflib.unified_diff(
            old.stdout.splitlines(keepends=True),
            current.splitlines(keepends=True),
            f"{shown_en} (as translated)",
            f"{shown_en} (now)",
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
    for language in locales:
        locale = language.locale
        counts = collections.Counter(states[locale].state for states in table.values())
        reviewed = sum(bool(states[locale].reviewed_by) for states in table.values())
        print(
            f"\n{language.name} ({locale}): {counts[UP_TO_DATE]} up to date, {counts[OUTDATED]} outdated,"
            f" {counts[MISSING]} missing; {reviewed} reviewed"
        )
        for page, states in table.items():
            if states[locale].state != OUTDATED:
                continue
            ids = ", ".join(section.id for section in states[locale].outdated) or "none"
            print(f"\n  {locale}/{page}: outdated sections: {ids}")
            if states[locale].removed:
                print(f"  {locale}/{page}: sections English no longer has: {', '.join(states[locale].removed)}")
            if diffs:
                for _, diff in section_diffs(locale, page, root):
                    print("    " + diff.rstrip("\n").replace("\n", "\n    "))
            print(f"  when translated: python3 dev.py translations update {locale}/{page}")
        messages = messages_state(locale, root)
        print(f"\n  the exercise checker's messages ({locale}/{MESSAGES}): {messages}")
        if messages == OUTDATED:
            print(f"  see what changed: python3 dev.py translations diff {locale}/{MESSAGES}")
    return 0


# ---------------------------------------------------------------------------------------------------
# Changing the records
# ---------------------------------------------------------------------------------------------------


def _section_lines(text: str, section_id: str) -> range | None:
    """The lines of ``text`` (1-based) that the section ``section_id`` spans, or None."""
    found = sections(text)
    for index, section in enumerate(found):
        if section.id == section_id:
            end = found[index + 1].line if index + 1 < len(found) else text.count("\n") + 2
            return range(section.line, end)
    return None


def update(items: list[str], root: Path = ROOT) -> int:
    """Record that each page (or section, ``zh/masks.md#setup``) now translates the current English text,
    once its structure checks pass."""
    failed = False
    for item in items:
        locale, page, only = _split(item)
        english, translation = paths(locale, page, root)
        shown_en, shown = english.relative_to(root).as_posix(), translation.relative_to(root).as_posix()
        if not translation.exists():
            print(f"{shown} does not exist: copy {shown_en} there and translate it first.")
            failed = True
            continue
        text = translation.read_text(encoding="utf-8")
        problems = [problem for problem in check_page(locale, page, root) if "freshness record" not in problem.what]
        if page == MESSAGES:
            if problems:
                print(*problems, sep="\n")
                print(f"Not recorded: fix the {len(problems)} problem(s) above in {shown} first.")
                failed = True
                continue
            hash_ = source_hash(english.read_text(encoding="utf-8"))
            translation.write_text(with_record(text, hash_), encoding="utf-8", newline="\n")
            print(f"{shown} now records {shown_en} at {hash_[:12]}: up to date.")
            continue
        source = sections(english.read_text(encoding="utf-8"))
        if only is not None:
            lines = _section_lines(text, only)
            if only not in {section.id for section in source} or lines is None:
                print(f"{shown}#{only}: both {shown_en} and {shown} must have a section {{ #{only} }}.")
                failed = True
                continue
            problems = [problem for problem in problems if problem.line in lines]
        if problems:
            print(*problems, sep="\n")
            print(f"Not recorded: fix the {len(problems)} problem(s) above in {shown} first.")
            failed = True
            continue
        recorded = read_sections(text) or {}
        if only is None:
            recorded = {section.id: section.hash for section in source}
        else:
            recorded[only] = next(section.hash for section in source if section.id == only)
            order = [section.id for section in source]
            recorded = dict(sorted(recorded.items(), key=lambda item: order.index(item[0]) if item[0] in order else 0))
        translation.write_text(with_front_matter(text, SECTIONS_KEY, recorded), encoding="utf-8", newline="\n")
        now = page_state(locale, page, root / "docs")
        what = f"section {only!r}" if only else "every section"
        tail = "up to date." if now.state == UP_TO_DATE else f"{now.current} of {len(now.sections)} sections current."
        print(f"{shown} now records {what} of {shown_en}: {tail}")
    return 1 if failed else 0


def no_translation_needed(items: list[str], since: str, root: Path = ROOT) -> int:
    """An English change that needs no translation (a typo, a link): every translated section that was current
    at ``since`` and whose English text this change touched records the new English text. The translations'
    text is not touched; sections that were outdated already stay outdated."""
    failed = False
    for item in items:
        item, _, only = item.partition("#")
        page = item.replace("\\", "/").removeprefix("docs/").removeprefix(f"{SOURCE}/")
        english = root / "docs" / SOURCE / page
        shown_en = f"docs/{SOURCE}/{page}"
        before = git("show", f"{since}:{shown_en}", root=root)
        if not english.exists() or before.returncode != 0:
            print(f"{shown_en}: not an English page both in {since} and now.")
            failed = True
            continue
        old = {section.id: section.hash for section in sections(before.stdout)}
        changed = [
            section
            for section in sections(english.read_text(encoding="utf-8"))
            if old.get(section.id, section.hash) != section.hash and only in ("", section.id)
        ]
        if not changed:
            print(
                f"{shown_en}: no section{' ' + only if only else ''} differs from {since}. Run this before"
                " committing the change, or name the commit before it: --since main"
            )
            failed = True
            continue
        for language in languages(root):
            translation = root / "docs" / language.locale / page
            if not translation.exists():
                continue
            text = translation.read_text(encoding="utf-8")
            recorded = read_sections(text) or {}
            moved = [section for section in changed if recorded.get(section.id) == old[section.id]]
            stale = [section.id for section in changed if section not in moved]
            recorded.update({section.id: section.hash for section in moved})
            translation.write_text(with_front_matter(text, SECTIONS_KEY, recorded), encoding="utf-8", newline="\n")
            shown = f"docs/{language.locale}/{page}"
            if moved:
                ids = ", ".join(section.id for section in moved)
                print(f"{shown}: {ids} still current (this change needs no translation).")
            if stale:
                print(f"{shown}: {', '.join(stale)} outdated before this change already: left for a translator.")
    return 1 if failed else 0


def review(item: str, by: str, root: Path = ROOT) -> int:
    """Mark a translation reviewed by ``by``, as it reads now; any later edit of its text undoes the mark."""
    locale, page = split_page(item)
    translation = paths(locale, page, root)[1]
    shown = translation.relative_to(root).as_posix()
    if page == MESSAGES or not translation.exists():
        print(f"{shown}: name a translated page, such as {locale}/masks.md.")
        return 1
    if not re.fullmatch(r"[\w.-]+", by):
        print(f"translations review: --by {by!r}: expected the reviewer's GitHub user name, such as li-wei")
        return 2
    if page_state(locale, page, root / "docs").state != UP_TO_DATE:
        print(f"{shown} is outdated: a review vouches for a current translation. Update it first (diff, update).")
        return 1
    problems = check_page(locale, page, root)
    if problems:
        print(*problems, sep="\n")
        print(f"Not marked: fix the {len(problems)} problem(s) above in {shown} first.")
        return 1
    text = translation.read_text(encoding="utf-8")
    mark = {"by": by, "translation": text_hash(translated_text(text))}
    translation.write_text(with_front_matter(text, REVIEWED_KEY, mark), encoding="utf-8", newline="\n")
    print(f"{shown} marked reviewed by {by}: the status page shows it until the translation's text changes.")
    return 0


def run_checks(items: list[str], root: Path = ROOT) -> int:
    problems = check(root, [item.partition("#")[0] for item in items])
    if problems:
        print(*problems, sep="\n")
        print(f"\n{len(problems)} problem(s). CONTRIBUTING.md (CONTRIBUTING.zh-CN.md) explains each rule.")
        return 1
    print("All translation checks passed.")
    return 0


# ---------------------------------------------------------------------------------------------------
# Pull requests
# ---------------------------------------------------------------------------------------------------


def _sections_at(revision: str, path: str, root: Path) -> dict[str, Section] | None:
    shown = git("show", f"{revision}:{path}", root=root)
    return {section.id: section for section in sections(shown.stdout)} if shown.returncode == 0 else None


def github_notices(base: str, root: Path = ROOT) -> int:
    """GitHub Actions notices, and the job summary, for the translated sections a change (``base``...HEAD)
    has made outdated, each with its English diff, and those it marked as needing no translation; never fails.
    """
    changed = git("diff", "--name-only", f"{base}...HEAD", "--", f"docs/{SOURCE}/", root=root)
    if changed.returncode != 0:
        print(f"::warning title=Translation status::could not compare with {base}: {changed.stderr.strip()}")
        return 0
    touched_pages = sorted(path.removeprefix(f"docs/{SOURCE}/") for path in changed.stdout.split())
    outdated: list[tuple[str, str, str, list[tuple[Section, str]]]] = []  # (language, page, ids, diffs)
    kept: list[tuple[str, str, list[str]]] = []  # (language, page, ids marked as needing no translation)
    for page in touched_pages:
        english = root / "docs" / SOURCE / page
        if english.suffix != ".md" or not english.exists():
            continue
        before = _sections_at(f"{base}", f"docs/{SOURCE}/{page}", root) or {}
        touched = {
            s.id for s in sections(english.read_text("utf-8")) if getattr(before.get(s.id), "hash", "") != s.hash
        }
        for language in languages(root):
            translation = root / "docs" / language.locale / page
            if not translation.exists():
                continue
            now = page_state(language.locale, page, root / "docs")
            stale = [section.id for section in now.outdated if section.id in touched]
            if stale:
                diffs = [d for d in section_diffs(language.locale, page, root) if d[0].id in stale]
                outdated.append((language.name, language.locale, page, diffs))
            tr_before = _sections_at(f"{base}", f"docs/{language.locale}/{page}", root) or {}
            tr_now = {section.id: section for section in sections(translation.read_text("utf-8"))}
            same_text = {i for i in tr_now if i in tr_before and tr_before[i].text == tr_now[i].text}
            marked = sorted(touched - set(stale) - {s.id for s in now.outdated} & same_text)
            if marked:
                kept.append((language.name, f"docs/{language.locale}/{page}", marked))
    for name, locale, page, diffs in outdated:
        ids = ", ".join(section.id for section, _ in diffs)
        print(
            f"::notice file=docs/{locale}/{page},title=Translation now outdated::This pull request changes"
            f" docs/{SOURCE}/{page}, so {len(diffs)} section(s) of its {name} translation docs/{locale}/{page}"
            f" are now outdated ({ids}); the site's banner names them. Not an error: a translator can update"
            f" them later, or you can now (python3 dev.py translations diff {locale}/{page}). A typo fix that"
            f" needs no translation: python3 dev.py translations no-translation-needed docs/{SOURCE}/{page}"
            " --since <the base branch>."
        )
    for name, shown, marked in kept:
        print(
            f"::notice file={shown},title=No translation needed::This pull request changes {', '.join(marked)} in"
            f" English and records that the {name} translation needs no change there."
        )
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(_summary(outdated, kept))
    if not outdated:
        print("No translation became outdated.")
    return 0


def _summary(outdated: list, kept: list) -> str:
    """The job summary: every section this pull request made outdated, with its diff, folded."""
    if not outdated and not kept:
        return "### Translations\n\nNo translation became outdated.\n"
    lines = []
    if outdated:
        lines += ["### Translations this pull request makes outdated", ""]
        lines += ["Not an error: each section below shows its English change since it was translated.", ""]
    for name, locale, page, diffs in outdated:
        lines += [f"#### docs/{locale}/{page} ({name}): {len(diffs)} section(s)", ""]
        for section, diff in diffs:
            fence = _fence(diff)
            lines += [f"<details><summary>#{section.id}: {section.title}</summary>", "", f"{fence}diff"]
            lines += [diff.rstrip("\n"), fence, "", "</details>", ""]
        lines += [f"Update them: `python3 dev.py translations diff {locale}/{page}`, translate, then"]
        lines += [f"`python3 dev.py translations update {locale}/{page}`.", ""]
    if kept:
        lines += ["### Marked as needing no translation", ""]
        lines += [f"- {shown} ({name}): {', '.join(ids)}" for name, shown, ids in kept]
        lines.append("")
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
