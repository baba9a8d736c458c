"""Freshness records: which English page each translation translates, and each page's state.

A translated page starts with a freshness record, the Git blob id of the English page it translates (what
``git hash-object docs/en/<page>`` prints)::

    ---
    source_hash: 3b18e512dba79e4c8300dd08aeb37f8e728b8dad
    ---

A page is *up to date* while that id matches the English page, *outdated* once the English page changes, and
*missing* where no translation exists (the site then shows the English page).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from docs_tools.config import SOURCE, languages
from docs_tools.project import DOCS, ROOT

UP_TO_DATE, OUTDATED, MISSING = "up to date", "outdated", "missing"
FRONT_MATTER = re.compile(r"\A---\n(?P<body>.*?\n)---\n+", re.DOTALL)
RECORD = re.compile(r"^source_hash:[ \t]*(?P<hash>\S*)[ \t]*$", re.MULTILINE)


def pages(docs: Path = DOCS) -> list[str]:
    """The English pages, as paths relative to ``docs/en`` (``masks.md``)."""
    return sorted(path.relative_to(docs / SOURCE).as_posix() for path in (docs / SOURCE).rglob("*.md"))


def source_hash(text: str) -> str:
    """The Git blob id of ``text`` as committed (line endings normalized to LF)."""
    data = text.replace("\r\n", "\n").encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # Git's object id, not for security


def read_record(text: str) -> str | None:
    """The ``source_hash`` in a translated page's front matter, or None."""
    front = FRONT_MATTER.match(text.replace("\r\n", "\n"))
    record = front and RECORD.search(front["body"])
    return record["hash"] if record else None


def with_record(text: str, hash_: str) -> str:
    """``text`` with its front matter's ``source_hash`` set to ``hash_`` (front matter added if none)."""
    text = text.replace("\r\n", "\n")
    front = FRONT_MATTER.match(text)
    if front is None:
        return f"---\nsource_hash: {hash_}\n---\n\n{text}"
    body = front["body"]
    body = RECORD.sub(f"source_hash: {hash_}", body) if RECORD.search(body) else body + f"source_hash: {hash_}\n"
    return f"---\n{body}---\n\n{text[front.end() :]}"


def without_front_matter(text: str) -> str:
    """``text`` with its front matter blanked out, keeping the line numbers of everything else."""
    front = FRONT_MATTER.match(text)
    return text if front is None else "\n" * front.group(0).count("\n") + text[front.end() :]


def state(locale: str, page: str, docs: Path = DOCS) -> str:
    """UP_TO_DATE, OUTDATED or MISSING: the translation ``docs/<locale>/<page>`` against its English page."""
    translation = docs / locale / page
    if not translation.exists():
        return MISSING
    english = (docs / SOURCE / page).read_text(encoding="utf-8")
    recorded = read_record(translation.read_text(encoding="utf-8"))
    return UP_TO_DATE if recorded == source_hash(english) else OUTDATED


def statuses(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """``{page: {locale: state}}`` for every English page and every translation language."""
    docs = root / "docs"
    locales = [language.locale for language in languages(root)]
    return {page: {locale: state(locale, page, docs) for locale in locales} for page in pages(docs)}


def split_page(item: str) -> tuple[str, str]:
    """``zh/masks.md`` or ``docs/zh/masks.md`` -> (``zh``, ``masks.md``)."""
    locale, _, page = item.replace("\\", "/").removeprefix("docs/").partition("/")
    if not page.endswith(".md"):
        raise SystemExit(f"translations: {item!r}: name a translated page, such as zh/masks.md")
    return locale, page
