"""Keep the translations in step with the English pages: freshness records, status, structure checks.

    python3 dev.py translations                      # every page: up to date, outdated or missing
    python3 dev.py translations diff zh/masks.md     # what changed in English since it was translated
    python3 dev.py translations check [zh/masks.md]  # the structure checks, with how to fix each problem
    python3 dev.py translations update zh/masks.md   # record that the page now translates the English one
    python3 dev.py translations diff zh/messages.toml    # the same for the exercise checker's messages
    python3 dev.py translations add-language fr --name Français   # start a new language

English (``docs/en/``) is the source; every other language folder holds translations of its pages under
the same file names. Each translation's freshness record and state: ``docs_tools/records.py``; the structure
checks: ``docs_tools/translation_checks.py``. ``hooks/translations.py`` puts the same states on the site: a
banner on outdated and missing pages, and the table of the translation status page.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

from docs_tools.config import SOURCE, languages
from docs_tools.project import ROOT
from docs_tools.records import (
    MESSAGES,
    MISSING,
    OUTDATED,
    UP_TO_DATE,
    messages_state,
    pages,
    paths,
    read_record,
    source_hash,
    split_page,
    state,
    statuses,
    with_record,
)
from docs_tools.translation_checks import check, check_page

#: Where add-language puts a new language in mkdocs.yml: right after the last configured one.
LANGUAGE_MARK = "# python3 dev.py translations add-language adds new languages above this line"


def print_status(root: Path = ROOT) -> int:
    table = statuses(root)
    locales = languages(root)
    width = max(len(page) for page in table) + 2
    print(f"{'page':<{width}}" + "".join(f"{language.locale:<12}" for language in locales))
    for page, states in table.items():
        print(f"{page:<{width}}" + "".join(f"{states[language.locale]:<12}" for language in locales))
    # The exercise checker's messages, a translated file like a page (docs_tools/records.py).
    print(f"{MESSAGES:<{width}}" + "".join(f"{messages_state(language.locale, root):<12}" for language in locales))
    for language in locales:
        counts = collections.Counter(states[language.locale] for states in table.values())
        print(
            f"\n{language.name} ({language.locale}): {counts[UP_TO_DATE]} up to date, {counts[OUTDATED]} outdated,"
            f" {counts[MISSING]} missing"
        )
        for page, states in table.items():
            if states[language.locale] == OUTDATED:
                print(f"  see what changed: python3 dev.py translations diff {language.locale}/{page}")
        messages = messages_state(language.locale, root)
        print(f"  the exercise checker's messages ({language.locale}/{MESSAGES}): {messages}")
        if messages == OUTDATED:
            print(f"  see what changed: python3 dev.py translations diff {language.locale}/{MESSAGES}")
    return 0


def git(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, encoding="utf-8")


def print_diff(item: str, root: Path = ROOT) -> int:
    locale, page = split_page(item)
    english, translation = paths(locale, page, root)
    shown_en, shown = english.relative_to(root).as_posix(), translation.relative_to(root).as_posix()
    if not translation.exists():
        print(f"{shown} does not exist yet: translate {shown_en} as a whole.")
        return 1
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


def update(items: list[str], root: Path = ROOT) -> int:
    """Record that each page now translates the current English page, once its structure checks pass."""
    failed = False
    for item in items:
        locale, page = split_page(item)
        english, translation = paths(locale, page, root)
        shown_en, shown = english.relative_to(root).as_posix(), translation.relative_to(root).as_posix()
        if not translation.exists():
            print(f"{shown} does not exist: copy {shown_en} there and translate it first.")
            failed = True
            continue
        problems = [problem for problem in check_page(locale, page, root) if "freshness record" not in problem.what]
        if problems:
            print(*problems, sep="\n")
            print(f"Not recorded: fix the {len(problems)} problem(s) above in {shown} first.")
            failed = True
            continue
        hash_ = source_hash(english.read_text(encoding="utf-8"))
        text = translation.read_text(encoding="utf-8")
        translation.write_text(with_record(text, hash_, toml=page == MESSAGES), encoding="utf-8", newline="\n")
        print(f"{shown} now records {shown_en} at {hash_[:12]}: up to date.")
    return 1 if failed else 0


def run_checks(items: list[str], root: Path = ROOT) -> int:
    problems = check(root, items)
    if problems:
        print(*problems, sep="\n")
        print(f"\n{len(problems)} problem(s). CONTRIBUTING.md (CONTRIBUTING.zh-CN.md) explains each rule.")
        return 1
    print("All translation checks passed.")
    return 0


def github_notices(base: str, root: Path = ROOT) -> int:
    """GitHub Actions notices for the translations a change has made outdated; never fails.

    A page is named when this change (``base``...HEAD) touched its English page and the translation
    now records an older version of it.
    """
    changed = git("diff", "--name-only", f"{base}...HEAD", "--", f"docs/{SOURCE}/", root=root)
    if changed.returncode != 0:
        print(f"::warning title=Translation status::could not compare with {base}: {changed.stderr.strip()}")
        return 0
    touched = {path.removeprefix(f"docs/{SOURCE}/") for path in changed.stdout.split()}
    outdated = []
    for language in languages(root):
        for page in sorted(touched):
            english = root / "docs" / SOURCE / page
            if english.suffix == ".md" and english.exists() and state(language.locale, page, root / "docs") == OUTDATED:
                outdated.append((language, page))
    for language, page in outdated:
        print(
            f"::notice file=docs/{language.locale}/{page},title=Translation now outdated::This pull request"
            f" changes docs/{SOURCE}/{page}, so its {language.name} translation docs/{language.locale}/{page}"
            " now shows an 'outdated' banner on the site. Not an error: a translator can update it later, or"
            f" you can now (python3 dev.py translations diff {language.locale}/{page})."
        )
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and outdated:
        with open(summary, "a", encoding="utf-8") as out:
            out.write("### Translations this pull request makes outdated\n\n")
            out.write("| English page | Translation |\n|---|---|\n")
            out.writelines(f"| docs/{SOURCE}/{page} | docs/{lang.locale}/{page} |\n" for lang, page in outdated)
    if not outdated:
        print("No translation became outdated.")
    return 0


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
    status = commands.add_parser("status", help="list every page as up to date, outdated or missing (the default)")
    status.add_argument("--github-base", metavar="REF", help="print GitHub notices for pages REF...HEAD made outdated")
    commands.add_parser("diff", help="show what changed in English since a page was translated").add_argument("page")
    commands.add_parser("check", help="run the structure checks").add_argument("pages", nargs="*")
    record = commands.add_parser("update", help="record that pages now translate the current English pages")
    record.add_argument("pages", nargs="+")
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
    if args.command == "add-language":
        return add_language(args.locale, args.name, root)
    if args.command == "status" and args.github_base:
        return github_notices(args.github_base, root)
    return print_status(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
