"""The site's settings, read from ``mkdocs.yml``, the one place they are written: the languages, the chapters
that have a notebook, the published site's and the repository's addresses, and each language's words."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from docs_tools.project import ROOT

#: The language every page is written in first; the others translate it.
SOURCE = "en"
#: A mapping read from mkdocs.yml (the whole file or a part of it): its values have whatever types the YAML gives them.
Settings = dict[str, Any]


@dataclass(frozen=True)
class Language:
    locale: str
    name: str
    #: Every page must exist in a complete language; a language still being added may miss pages.
    complete: bool


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Reads mkdocs.yml, whose !!python tag (the slugify function) becomes None. With libyaml (PyYAML's
    wheels have it) where there is one: the pure-Python parser takes 45 ms for this file."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@functools.lru_cache(maxsize=8)
def _parse(text: str) -> Settings:
    return yaml.load(text, Loader=_Loader)


def config(root: Path = ROOT) -> Settings:
    """mkdocs.yml, as it is now (parsed once for each content it has had), yours to change."""
    return copy.deepcopy(_parse((root / "mkdocs.yml").read_text(encoding="utf-8")))


def _i18n_languages(settings: Settings) -> list[Settings]:
    i18n = next(plugin["i18n"] for plugin in settings["plugins"] if isinstance(plugin, dict) and "i18n" in plugin)
    return i18n["languages"]


def languages(root: Path = ROOT) -> list[Language]:
    """The translation languages configured in mkdocs.yml (English, the source, is not one of them)."""
    settings = config(root)
    complete = set(settings["extra"].get("complete_languages", []))
    return [
        Language(language["locale"], language["name"], language["locale"] in complete)
        for language in _i18n_languages(settings)
        if language["locale"] != SOURCE
    ]


def complete_locales(root: Path = ROOT) -> list[str]:
    """The source language and every complete translation: the languages whose pages all exist."""
    return [SOURCE, *(language.locale for language in languages(root) if language.complete)]


def notebook_chapters(root: Path = ROOT) -> list[str]:
    """The chapters with a notebook, in the navigation's order: the pages it lists as ``notebooks/<page>.ipynb``."""

    def walk(items: list[Any]) -> list[str]:
        found = []
        for item in items:
            target = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(target, list):
                found += walk(target)
            elif target.startswith("notebooks/") and target.endswith(".ipynb"):
                found.append(target.removeprefix("notebooks/").removesuffix(".ipynb"))
        return found

    return walk(config(root)["nav"])


def addresses(root: Path = ROOT) -> tuple[str, str]:
    """The published site's address (ending in /) and the repository's (without one)."""
    settings = config(root)
    return settings["site_url"].rstrip("/") + "/", settings["extra"]["repository"].rstrip("/")


def extra(lang: str, root: Path = ROOT) -> Settings:
    """``extra`` in mkdocs.yml as the pages of ``lang`` see it: each language's i18n entry overrides keys of it."""
    settings = config(root)
    merged = dict(settings["extra"])
    for language in _i18n_languages(settings):
        if language["locale"] == lang:
            for key, value in language.get("extra", {}).items():
                merged[key] = {**merged[key], **value} if isinstance(value, dict) and key in merged else value
    return merged


def url(lang: str, source: str) -> str:
    """Where the page built from ``docs/<lang>/<source>`` is served, relative to the site's root: ``zh/masks/``
    for ``masks.md``, ``notebooks/masks/`` for an English ``notebooks/masks.ipynb``, ``""`` for the home page
    (the source language at the root, the others under their locale; MkDocs' directory URLs)."""
    prefix = "" if lang == SOURCE else f"{lang}/"
    stem = source.removesuffix(".md").removesuffix(".ipynb")
    return prefix + ("" if stem == "index" else stem + "/")


def colab_url(path: str, root: Path = ROOT) -> str:
    """Colab's address for the notebook at ``path`` in the repository (``docs/zh/notebooks/masks.ipynb``), on main."""
    repository = addresses(root)[1].removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{repository}/blob/main/{path}"
