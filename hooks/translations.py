"""Show each translation's state on the site, as ``python3 dev.py translations`` reports it.

* A translated page with sections whose English text changed since they were translated gets an "outdated"
  banner, in the page's language, that names those sections and links each to its English section. A page
  shown in English because its translation does not exist yet gets a "not translated yet" banner. Notebook
  pages follow their chapter page.
* The translation status page (``translation-status.md``) holds the marker ``<!-- translation-status -->``,
  which becomes a table of every page in every language: its state, how many of its sections are current,
  and who reviewed it.

The states and the freshness records come from ``docs_tools/records.py``; the banner and table text
from ``extra.translation`` in mkdocs.yml, which each language overrides in its i18n entry.
"""

from __future__ import annotations

import html
import re
from pathlib import Path, PurePosixPath
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url
from mkdocs_static_i18n.plugin import I18n

from docs_tools import records

MARKER = "<!-- translation-status -->"


def _languages(config: MkDocsConfig) -> tuple[str, str, dict[str, str]]:
    """(the language being built, the default language, {locale: name} of every language)."""
    i18n: I18n = config.plugins["i18n"]
    names = {language.locale: language.name for language in i18n.config.languages}
    return i18n.current_language, i18n.default_language, names


def _text(config: MkDocsConfig) -> dict[str, str]:
    return config.extra["translation"]


def _title(path: Path) -> str:
    match = re.search(r"^# (.*?)(?:\s*\{[^}]*\})?\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1) if match else path.stem


def _nav_order(nav: list[Any]) -> dict[str, int]:
    """{page: its position in the navigation}, so the table lists pages the way the site does."""
    order: dict[str, int] = {}

    def walk(items: list[Any]) -> None:
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(value, list):
                walk(value)
            else:
                order.setdefault(value, len(order))

    walk(nav)
    return order


def _cell(state: records.PageState, text: dict[str, str]) -> str:
    words = {records.UP_TO_DATE: "up_to_date", records.OUTDATED: "outdated_state", records.MISSING: "missing_state"}
    cell = f'<span data-translation-state="{state.state}">{text[words[state.state]]}</span>'
    if state.state == records.MISSING:
        return cell
    total = len(state.sections)
    counted = text["sections_current"].format(current=state.current, sections=total)
    cell += f'<br><span data-sections-current="{state.current}" data-sections="{total}">{counted}</span>'
    if state.reviewed_by:
        by = html.escape(state.reviewed_by)
        cell += f'<br><span data-reviewed-by="{by}">{text["reviewed_by"].format(name=by)}</span>'
    return cell


def status_table(config: MkDocsConfig) -> str:
    """The status page's table, as Markdown, in the language being built."""
    current, default, names = _languages(config)
    root = Path(config.docs_dir).parent
    text = _text(config)
    table = records.page_states(root)
    locales = [locale for locale in names if locale != default]
    lines = []
    for locale in locales:
        of_locale = [page[locale] for page in table.values()]
        count = {
            state: sum(page.state == state for page in of_locale)
            for state in (records.UP_TO_DATE, records.OUTDATED, records.MISSING)
        }
        lines.append(
            "- "
            + text["summary"].format(
                language=names[locale],
                pages=len(table),
                up_to_date=count[records.UP_TO_DATE],
                outdated=count[records.OUTDATED],
                missing=count[records.MISSING],
                sections=sum(len(page.sections) for page in of_locale),
                current=sum(page.current for page in of_locale if page.state != records.MISSING),
                reviewed=sum(bool(page.reviewed_by) for page in of_locale),
            )
        )
    lines += ["", "| " + " | ".join([text["page"], *(names[locale] for locale in locales)]) + " |"]
    lines.append("|---" * (len(locales) + 1) + "|")
    docs = Path(config.docs_dir)
    order = _nav_order(config.nav or [])  # without a nav in mkdocs.yml, the pages in their paths' order
    for page, states in sorted(table.items(), key=lambda item: order.get(item[0], len(order))):
        shown = docs / current / page if (docs / current / page).exists() else docs / default / page
        cells = [_cell(states[locale], text) for locale in locales]
        lines.append(f"| [{_title(shown)}]({page}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if MARKER not in markdown:
        return markdown
    if PurePosixPath(page.file.src_uri).name != "translation-status.md":
        raise PluginError(f"{page.file.src_uri}: {MARKER} belongs on translation-status.md only")
    return markdown.replace(MARKER, status_table(config))


def _inline(title: str) -> str:
    """A heading's text as HTML: escaped, with its `code` spans."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(title))


def banner(page: Page, config: MkDocsConfig) -> dict[str, Any] | None:
    """What the page's translation banner says and links to, or None for no banner."""
    current, default, _ = _languages(config)
    if current == default:
        return None
    src = PurePosixPath(page.file.src_uri)
    source_locale, rest = src.parts[0], PurePosixPath(*src.parts[1:])
    if rest.parts[0] == "notebooks":  # a notebook follows the chapter page it is generated from
        rest = PurePosixPath(*rest.parts[1:]).with_suffix(".md")
    docs = Path(config.docs_dir)
    if rest.as_posix() not in records.pages(docs):
        return None
    english = page.url.removeprefix(f"{current}/")
    sections: list[dict[str, str]] = []
    if source_locale == default:
        kind = "missing"  # i18n's English fallback for a page not translated yet
    else:
        state = records.page_state(current, rest.as_posix(), docs)
        if state.state != records.OUTDATED:
            return None
        kind = "outdated"
        # Each outdated section, under its translated title where the translation has it, linked to the English
        # section of the chapter page (a notebook's headings have no ids of their own).
        translated = {s.id: s.title for s in records.sections((docs / current / rest).read_text(encoding="utf-8"))}
        folder = "" if rest.parent.as_posix() == "." else rest.parent.as_posix() + "/"
        chapter = folder if rest.stem == "index" else f"{folder}{rest.stem}/"
        chapter_url = get_relative_url(chapter or ".", page.url or ".")
        text = _text(config)
        sections = [
            {
                "title": _inline(translated.get(s.id) or s.title) if s.id else text["before_title"],
                "url": f"{chapter_url}#{s.id}" if s.id else chapter_url,
            }
            for s in state.outdated
        ]
        # A section English no longer has, under its translated title, with the English page's link.
        sections += [
            {"title": text["removed_section"].format(title=_inline(translated.get(key) or key)), "url": chapter_url}
            for key in state.removed
        ]
    text = _text(config)
    repository = config.extra["repository"].rstrip("/")
    return {
        "kind": kind,
        "title": text[f"{kind}_title"],
        "text": text[kind],
        "sections": sections,
        "source_url": get_relative_url(english or ".", page.url or "."),
        "read_source": text["read_source"],
        "contribute_url": f"{repository}/blob/main/{text['contributing']}",
        "contribute": text["contribute"],
    }


def on_page_context(context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation) -> dict[str, Any]:
    context["translation_banner"] = banner(page, config)
    return context
