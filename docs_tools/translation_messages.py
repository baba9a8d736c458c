"""What the translation tooling says about a page, in the page's language: one TOML file per language in
``docs_tools/messages/``, as the exercise checker keeps its own (``exercises/attention_exercises/messages/``).

``en.toml`` is the source: a ``[table]`` per kind of problem the structure checks find (its ``what`` and
``fix``), ``[cli]`` for the lines ``python3 dev.py translations`` prints about a page, ``[words]`` and
``[states]`` for the words those messages are made of. Every other file is a language, with the same tables,
keys and ``{fields}`` (``tests/tooling/test_translation_messages.py`` checks them with the checks the
checker's translated messages pass). A message a language lacks is said in English.

These are the tooling's own messages, not a translator's: whoever changes an English one changes it in every
language in the same pull request, so they carry no freshness record and ``translations status`` does not list
them.
"""

from __future__ import annotations

import functools
import string
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest and the checker require tomli there
    import tomli as tomllib

#: The catalogues: ``<lang>.toml``, English the source.
FOLDER = Path(__file__).resolve().parent / "messages"
ENGLISH = "en"


@functools.cache
def catalogue(lang: str, folder: Path = FOLDER) -> dict[str, str]:
    """``{"table.key": template}`` of ``<folder>/<lang>.toml``; ``{}`` for a language without one."""
    path = folder / f"{lang}.toml"
    if not path.is_file():
        return {}
    tables: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    return {
        f"{table}.{key}": text
        for table, entries in tables.items()
        if isinstance(entries, dict)
        for key, text in entries.items()
        if isinstance(text, str)
    }


def languages(folder: Path = FOLDER) -> tuple[str, ...]:
    """Every language the tooling speaks, English first."""
    others = sorted(path.stem for path in folder.glob("*.toml") if path.stem != ENGLISH)
    return (ENGLISH, *others)


def say(lang: str, key: str, /, **fields: object) -> str:
    """The message ``key`` (``"table.key"``) in ``lang``, or in English where ``lang`` has no such message,
    with its ``{fields}`` filled in."""
    english = catalogue(ENGLISH)
    if key not in english:
        raise KeyError(f"say: key {key!r} is not a message of {FOLDER / 'en.toml'}; expected 'table.key' of it")
    template = catalogue(lang).get(key, english[key])
    wanted = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    if wanted - set(fields):
        raise TypeError(f"say({lang!r}, {key!r}): expected the fields {sorted(wanted)}, got {sorted(fields)}")
    return template.format(**fields)
