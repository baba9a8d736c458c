"""The checker's messages, one TOML file per language in ``messages/``.

``en.toml`` is the source. A translation has the same tables and keys, and
starts with ``source_hash``, the Git blob id of the English file it
translates: ``python3 dev.py translations`` lists it as up to date or
outdated, like a page, and checks it (every key, the same ``{fields}`` and
code). A language is every file there, so a new one is a new file."""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover (the package requires tomli there)
    import tomli as tomllib

#: Each message in every language that has it: {key: {lang: template}}.
Messages = Mapping[str, Mapping[str, str]]

_FOLDER = resources.files("attention_exercises").joinpath("messages")


@functools.cache
def _language(lang: str) -> dict[str, Any]:
    text = _FOLDER.joinpath(f"{lang}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


#: Every language the checker speaks, English first.
LANGUAGES: tuple[str, ...] = (
    "en",
    *sorted(
        entry.name.removesuffix(".toml")
        for entry in _FOLDER.iterdir()
        if entry.name.endswith(".toml") and entry.name != "en.toml"
    ),
)


def messages(table: str) -> Messages:
    """The ``[table]`` of every language's file; a language that lacks a key
    (a translation in progress) is left out of it, and English is said."""
    found: dict[str, dict[str, str]] = {}
    for lang in LANGUAGES:
        for key, text in _language(lang).get(table, {}).items():
            found.setdefault(key, {})[lang] = text
    return found
