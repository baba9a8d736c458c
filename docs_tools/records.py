"""Freshness records: which English sections each translation translates, and the state they give.

A page is made of sections: the part from its title to its first ``##`` heading, then one section per
heading (``##``, ``###``, ...), each named by its heading id (the ``{ #id }`` both languages share). A
translated page records, in its front matter, a short hash of the text of every English section it
translates, as it was when translated::

    ---
    source_sections:
      "masks": "5f0c2a41be97"
      "setup": "0d9a7e3c1b52"
    ---

A section is *current* while that hash matches the English section's text, and *outdated* once the English
section changes (or when the English page gains a section the translation has not recorded). A page is *up to
date* when all its sections are current, *outdated* otherwise, and *missing* where no translation exists (the
site then shows the English page). ``python3 dev.py translations`` finds the English text a section was
translated from by its hash in the English page's Git history, to show what changed since.

A second person who has read a translation against the English can mark it *reviewed*: the front matter then
names them and holds a hash of the translated text they read, so that any later edit of the translation
shows it as not reviewed again::

    reviewed:
      by: "li-wei"
      translation: "8c1d0e5f2a73"

The exercise checker's messages are translated as one file per language
(``exercises/attention_exercises/messages/<locale>.toml``), named ``messages.toml`` where a page would be
(``python3 dev.py translations diff zh/messages.toml``). Their record is the Git blob id of the whole English
file, on the translation's first line::

    source_hash = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from docs_tools.config import SOURCE, languages
from docs_tools.pages import HEADING, without_code
from docs_tools.project import DOCS, ROOT
from docs_tools.translation_messages import say

UP_TO_DATE, OUTDATED, MISSING = "up to date", "outdated", "missing"
FRONT_MATTER = re.compile(r"\A---\n(?P<body>(?:.*?\n)?)---\n+", re.DOTALL)
#: The front matter keys this module writes; a writer's other keys (``title:``, ``hide:``) are kept as they are.
SECTIONS_KEY, REVIEWED_KEY = "source_sections", "reviewed"
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


# ---------------------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    id: str  #: the heading's { #id }, or its title where it has none
    title: str  #: the heading's text, without the hashes and the id
    line: int  #: the heading's line in the file (1-based), front matter included
    text: str  #: the section's lines, heading included, up to the next heading

    @property
    def hash(self) -> str:
        return text_hash(self.text)


def text_hash(text: str) -> str:
    """A short hash of ``text`` that ignores what Markdown ignores between blocks: line endings, trailing
    spaces, and how many blank lines separate two blocks (or end the text)."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    data = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n").encode("utf-8")
    return hashlib.sha1(data).hexdigest()[:12]  # a fingerprint, not for security


def sections(text: str) -> list[Section]:
    """The sections of a page, in order: one per heading outside code blocks (the title's runs to the first
    ``##`` heading), and any text before the first heading as a section of its own, with the id ''."""
    text = without_front_matter(text.replace("\r\n", "\n"))
    lines = text.split("\n")
    starts: list[tuple[int, str, str]] = []  # (line index, id, title)
    prose = without_code(text)  # line for line the same text, code blanked out
    for match in HEADING.finditer(prose):
        index = prose.count("\n", 0, match.start())
        if not starts and "\n".join(lines[:index]).strip():
            starts.append((0, "", ""))  # text before the first heading: a section of its own
        starts.append((index, match["id"] or match["title"], match["title"]))
    if not starts:
        starts.append((0, "", ""))
    bounds = [*(index for index, _, _ in starts[1:]), len(lines)]
    return [
        Section(id_, title, index + 1, "\n".join(lines[index:end]))
        for (index, id_, title), end in zip(starts, bounds, strict=True)
    ]


# ---------------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------------


def source_hash(text: str) -> str:
    """The Git blob id of ``text`` as committed (line endings normalized to LF): the messages' record."""
    data = text.replace("\r\n", "\n").encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # Git's object id, not for security


def read_record(text: str) -> str | None:
    """The ``source_hash`` on the first line of translated messages, or None."""
    toml = TOML_RECORD.match(text.replace("\r\n", "\n"))
    return toml["hash"] if toml else None


def with_record(text: str, hash_: str) -> str:
    """Translated messages with their first line's ``source_hash`` set to ``hash_``."""
    return f'source_hash = "{hash_}"\n' + TOML_RECORD.sub("", text.replace("\r\n", "\n"), count=1)


class FrontMatterError(ValueError):
    """A page's front matter is not YAML: most often a merge conflict between two translators' records.
    ``detail`` is the YAML parser's word on it, ``path`` the page where it is known; the message, in English,
    names both (``translation_messages`` says it in the page's language)."""

    def __init__(self, detail: str, path: Path | None = None) -> None:
        self.detail, self.path = detail, path
        what = say("en", "front_matter.what", detail=detail)
        super().__init__(f"{path}: {what}" if path is not None else what)


def front_matter(text: str) -> dict[str, Any]:
    """A page's front matter as a mapping ({} without one); FrontMatterError where it is not YAML."""
    front = FRONT_MATTER.match(text.replace("\r\n", "\n"))
    try:
        loaded = yaml.safe_load(front["body"]) if front else None
    except yaml.YAMLError as error:
        raise FrontMatterError(str(error).splitlines()[0]) from error
    return loaded if isinstance(loaded, dict) else {}


def read_sections(text: str) -> dict[str, str] | None:
    """``{section id: hash of the English text it translates}`` from a translated page, or None without."""
    recorded = front_matter(text).get(SECTIONS_KEY)
    if not isinstance(recorded, dict):
        return None
    return {str(key): str(value) for key, value in recorded.items()}


def read_review(text: str) -> dict[str, str] | None:
    """``{"by": reviewer, "translation": hash}`` where the page was marked reviewed, else None."""
    review = front_matter(text).get(REVIEWED_KEY)
    if not isinstance(review, dict) or not {"by", "translation"} <= set(review):
        return None
    return {"by": str(review["by"]), "translation": str(review["translation"])}


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _key_block(key: str) -> re.Pattern[str]:
    """``key``'s line in a front matter body, and the indented lines under it."""
    return re.compile(rf"^{key}:.*\n(?:[ \t]+.*\n)*", re.MULTILINE)


def with_front_matter(text: str, key: str, value: dict[str, str] | None) -> str:
    """``text`` with its front matter's ``key`` set to the mapping ``value`` (removed for None), every other
    line of the front matter kept; front matter added or dropped as needed."""
    text = text.replace("\r\n", "\n")
    front = FRONT_MATTER.match(text)
    body, rest = (front["body"], text[front.end() :]) if front else ("", text)
    block = _key_block(key)
    body = block.sub("", body)
    written = (
        "" if value is None else f"{key}:\n" + "".join(f"  {_quoted(k)}: {_quoted(v)}\n" for k, v in value.items())
    )
    # The sections' record comes first: it is what translators look for.
    body = written + body if key == SECTIONS_KEY else body + written
    return f"---\n{body}---\n\n{rest}" if body.strip() else rest


def write(path: Path, text: str) -> None:
    """Write ``text`` (LF line endings) to ``path``, keeping the line endings the file had (CRLF on a Windows
    checkout), so that a change of its record is a change of its record alone."""
    crlf = path.exists() and b"\r\n" in path.read_bytes()
    path.write_text(text.replace("\r\n", "\n"), encoding="utf-8", newline="\r\n" if crlf else "\n")


def translated_text(text: str) -> str:
    """What a reviewer reads: the page without its front matter."""
    text = text.replace("\r\n", "\n")
    front = FRONT_MATTER.match(text)
    return text[front.end() :] if front else text


def without_front_matter(text: str) -> str:
    """``text`` with its front matter blanked out, keeping the line numbers of everything else."""
    front = FRONT_MATTER.match(text)
    return text if front is None else "\n" * front.group(0).count("\n") + text[front.end() :]


# ---------------------------------------------------------------------------------------------------
# States
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageState:
    """A translation's state against its English page, section by section."""

    state: str  #: UP_TO_DATE, OUTDATED or MISSING
    sections: list[Section]  #: the English page's sections
    #: Those whose recorded text differs, that have no record (new, or renamed) or that moved, in page order.
    outdated: list[Section]
    removed: list[str]  #: ids the translation records but English no longer has
    reviewed_by: str | None  #: who reviewed the translation as it now reads, or None
    moved: list[str]  #: ids of sections whose place in English changed since they were translated

    @property
    def current(self) -> int:
        return len(self.sections) - len(self.outdated)


def page_state(locale: str, page: str, docs: Path = DOCS) -> PageState:
    """The translation ``docs/<locale>/<page>`` against its English page."""
    english, translation = docs / SOURCE / page, docs / locale / page
    source = sections(english.read_text(encoding="utf-8"))
    if not translation.exists():
        return PageState(MISSING, source, source, [], None, [])
    text = translation.read_text(encoding="utf-8")
    try:
        recorded = read_sections(text) or {}
    except FrontMatterError as error:
        raise FrontMatterError(error.detail, translation) from None
    # The record lists the sections in the English order of its time: a section out of that order has moved.
    common = [section.id for section in source if section.id in recorded]
    order = [key for key in recorded if key in set(common)]
    matcher = difflib.SequenceMatcher(a=order, b=common, autojunk=False)
    kept = {key for block in matcher.get_matching_blocks() for key in common[block.b : block.b + block.size]}
    moved = [key for key in common if key not in kept]
    outdated = [s for s in source if recorded.get(s.id) != s.hash or s.id in moved]
    removed = [key for key in recorded if key not in {section.id for section in source}]
    review = read_review(text)
    reviewed_by = review["by"] if review and review["translation"] == text_hash(translated_text(text)) else None
    state = UP_TO_DATE if not outdated and not removed else OUTDATED
    return PageState(state, source, outdated, removed, reviewed_by, moved)


def state(locale: str, page: str, docs: Path = DOCS) -> str:
    """UP_TO_DATE, OUTDATED or MISSING: the translation ``docs/<locale>/<page>`` against its English page."""
    return page_state(locale, page, docs).state


def messages_state(locale: str, root: Path = ROOT) -> str:
    """UP_TO_DATE, OUTDATED or MISSING: the checker's messages in ``locale`` against the English ones."""
    english, translation = paths(locale, MESSAGES, root)
    if not translation.exists():
        return MISSING
    recorded = read_record(translation.read_text(encoding="utf-8"))
    return UP_TO_DATE if recorded == source_hash(english.read_text(encoding="utf-8")) else OUTDATED


def page_states(root: Path = ROOT) -> dict[str, dict[str, PageState]]:
    """``{page: {locale: PageState}}`` for every English page and every translation language."""
    docs = root / "docs"
    locales = [language.locale for language in languages(root)]
    return {page: {locale: page_state(locale, page, docs) for locale in locales} for page in pages(docs)}


def statuses(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """``{page: {locale: state}}`` for every English page and every translation language."""
    return {page: {locale: s.state for locale, s in states.items()} for page, states in page_states(root).items()}


def split_page(item: str) -> tuple[str, str]:
    """``zh/masks.md`` or ``docs/zh/masks.md`` -> (``zh``, ``masks.md``); ``zh/messages.toml`` (or the file's
    path) -> (``zh``, ``messages.toml``)."""
    item = item.replace("\\", "/")
    folder = MESSAGES_FOLDER.as_posix() + "/"
    if item.startswith(folder) and item.endswith(".toml"):
        return item.removeprefix(folder).removesuffix(".toml"), MESSAGES
    locale, _, page = item.removeprefix("docs/").partition("/")
    if not (page.endswith(".md") or page == MESSAGES) or locale == SOURCE:
        raise SystemExit(
            f"translations: {item!r}: name a translated page, such as zh/masks.md, or zh/messages.toml"
            + (f" ({SOURCE}/ holds the English pages, which are not translations)" if locale == SOURCE else "")
        )
    return locale, page
