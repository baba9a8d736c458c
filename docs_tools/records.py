"""Freshness records: which English page each translation translates, and each page's state.

A translated page starts with a freshness record, the Git blob id of the English page it translates (what
``git hash-object docs/en/<page>`` prints)::

    ---
    source_hash: 3b18e512dba79e4c8300dd08aeb37f8e728b8dad
    ---

A page is *up to date* while that id matches the English page, *outdated* once the English page changes, and
*missing* where no translation exists (the site then shows the English page).

The exercise checker's messages are translated the same way, one TOML file per language
(``exercises/attention_exercises/messages/<locale>.toml``), and named ``messages.toml`` where a page would
be (``python3 dev.py translations diff zh/messages.toml``). A translation's record is its first line::

    source_hash = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
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
#: The checker's messages, tracked like a page under this name.
MESSAGES = "messages.toml"
MESSAGES_FOLDER = Path("exercises", "attention_exercises", "messages")
TOML_RECORD = re.compile(r'\Asource_hash = "(?P<hash>[0-9a-f]*)"\n')


def paths(locale: str, item: str, root: Path = ROOT) -> tuple[Path, Path]:
    """The English file and its translation into ``locale``: a page's (``masks.md``), or the checker's messages
    (``messages.toml``)."""
    if item == MESSAGES:
        folder = root / MESSAGES_FOLDER
        return folder / f"{SOURCE}.toml", folder / f"{locale}.toml"
    return root / "docs" / SOURCE / item, root / "docs" / locale / item


def pages(docs: Path = DOCS) -> list[str]:
    """The English pages, as paths relative to ``docs/en`` (``masks.md``)."""
    return sorted(path.relative_to(docs / SOURCE).as_posix() for path in (docs / SOURCE).rglob("*.md"))


def source_hash(text: str) -> str:
    """The Git blob id of ``text`` as committed (line endings normalized to LF)."""
    data = text.replace("\r\n", "\n").encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # Git's object id, not for security


def read_record(text: str) -> str | None:
    """The ``source_hash`` in a translated page's front matter, or at the top of translated messages; or None."""
    toml = TOML_RECORD.match(text.replace("\r\n", "\n"))
    if toml:
        return toml["hash"]
    front = FRONT_MATTER.match(text.replace("\r\n", "\n"))
    record = front and RECORD.search(front["body"])
    return record["hash"] if record else None


def with_record(text: str, hash_: str, *, toml: bool = False) -> str:
    """``text`` with its front matter's ``source_hash`` set to ``hash_`` (front matter added if none); with
    ``toml``, the messages' first line."""
    text = text.replace("\r\n", "\n")
    if toml:
        return f'source_hash = "{hash_}"\n' + TOML_RECORD.sub("", text, count=1)
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


def _state(english: Path, translation: Path) -> str:
    if not translation.exists():
        return MISSING
    recorded = read_record(translation.read_text(encoding="utf-8"))
    return UP_TO_DATE if recorded == source_hash(english.read_text(encoding="utf-8")) else OUTDATED


def state(locale: str, page: str, docs: Path = DOCS) -> str:
    """UP_TO_DATE, OUTDATED or MISSING: the translation ``docs/<locale>/<page>`` against its English page."""
    return _state(docs / SOURCE / page, docs / locale / page)


def messages_state(locale: str, root: Path = ROOT) -> str:
    """UP_TO_DATE, OUTDATED or MISSING: the checker's messages in ``locale`` against the English ones."""
    return _state(*paths(locale, MESSAGES, root))


def statuses(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """``{page: {locale: state}}`` for every English page and every translation language."""
    docs = root / "docs"
    locales = [language.locale for language in languages(root)]
    return {page: {locale: state(locale, page, docs) for locale in locales} for page in pages(docs)}


def split_page(item: str) -> tuple[str, str]:
    """``zh/masks.md`` or ``docs/zh/masks.md`` -> (``zh``, ``masks.md``); ``zh/messages.toml`` (or the file's
    path) -> (``zh``, ``messages.toml``)."""
    item = item.replace("\\", "/")
    folder = MESSAGES_FOLDER.as_posix() + "/"
    if item.startswith(folder) and item.endswith(".toml"):
        return item.removeprefix(folder).removesuffix(".toml"), MESSAGES
    locale, _, page = item.removeprefix("docs/").partition("/")
    if not (page.endswith(".md") or page == MESSAGES):
        raise SystemExit(f"translations: {item!r}: name a translated page, such as zh/masks.md, or zh/messages.toml")
    return locale, page
