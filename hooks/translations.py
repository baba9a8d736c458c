"""Show each translation's state on the site, as ``python3 dev.py translations`` reports it.

* A translated page whose English page changed since it was translated gets an "outdated" banner, in
  the page's language, linking to the English page. A page shown in English because its translation
  does not exist yet gets a "not translated yet" banner. Notebook pages follow their chapter page.
* The translation status page (``translation-status.md``) holds the marker ``<!-- translation-status -->``,
  which becomes a table of every page and its state in every language.

The states and the freshness records come from ``docs_tools/records.py``; the banner and table text
from ``extra.translation`` in mkdocs.yml, which each language overrides in its i18n entry.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from docs_tools import records

MARKER = "<!-- translation-status -->"


def _languages(config: MkDocsConfig) -> tuple[str, str, dict[str, str]]:
    """(the language being built, the default language, {locale: name} of every language)."""
    i18n = config.plugins["i18n"]
    names = {language.locale: language.name for language in i18n.config.languages}
    return i18n.current_language, i18n.default_language, names


def _text(config: MkDocsConfig) -> dict[str, str]:
    return config.extra["translation"]


def _title(path: Path) -> str:
    match = re.search(r"^# (.*?)(?:\s*\{[^}]*\})?\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1) if match else path.stem


def _nav_order(nav: list) -> dict[str, int]:
    """{page: its position in the navigation}, so the table lists pages the way the site does."""
    order: dict[str, int] = {}

    def walk(items: list) -> None:
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(value, list):
                walk(value)
            else:
                order.setdefault(value, len(order))

    walk(nav)
    return order


def status_table(config: MkDocsConfig) -> str:
    """The status page's table, as Markdown, in the language being built."""
    current, default, names = _languages(config)
    root = Path(config.docs_dir).parent
    text = _text(config)
    table = records.statuses(root)
    locales = [locale for locale in names if locale != default]
    words = {
        records.UP_TO_DATE: text["up_to_date"],
        records.OUTDATED: text["outdated_state"],
        records.MISSING: text["missing_state"],
    }
    lines = []
    for locale in locales:
        counts = {state: sum(states[locale] == state for states in table.values()) for state in words}
        lines.append(
            "- "
            + text["summary"].format(
                language=names[locale],
                pages=len(table),
                up_to_date=counts[records.UP_TO_DATE],
                outdated=counts[records.OUTDATED],
                missing=counts[records.MISSING],
            )
        )
    lines += ["", "| " + " | ".join([text["page"], *(names[locale] for locale in locales)]) + " |"]
    lines.append("|---" * (len(locales) + 1) + "|")
    docs = Path(config.docs_dir)
    order = _nav_order(config.nav)
    for page, states in sorted(table.items(), key=lambda item: order.get(item[0], len(order))):
        shown = docs / current / page if (docs / current / page).exists() else docs / default / page
        cells = [
            f'<span data-translation-state="{states[locale]}">{words[states[locale]]}</span>' for locale in locales
        ]
        lines.append(f"| [{_title(shown)}]({page}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if MARKER not in markdown:
        return markdown
    if PurePosixPath(page.file.src_uri).name != "translation-status.md":
        raise PluginError(f"{page.file.src_uri}: {MARKER} belongs on translation-status.md only")
    return markdown.replace(MARKER, status_table(config))


def banner(page: Page, config: MkDocsConfig) -> dict[str, str] | None:
    """What the page's translation banner says and links to, or None for no banner."""
    current, default, _ = _languages(config)
    if current == default:
        return None
    src = PurePosixPath(page.file.src_uri)
    source_locale, rest = src.parts[0], PurePosixPath(*src.parts[1:])
    if rest.parts[0] == "notebooks":  # a notebook follows the chapter page it is generated from
        rest = PurePosixPath(*rest.parts[1:]).with_suffix(".md")
    if rest.as_posix() not in records.pages(Path(config.docs_dir)):
        return None
    if source_locale == default:
        kind = "missing"  # i18n's English fallback for a page not translated yet
    elif records.state(current, rest.as_posix(), Path(config.docs_dir)) == records.OUTDATED:
        kind = "outdated"
    else:
        return None
    text = _text(config)
    repository = config.extra["repository"].rstrip("/")
    english = page.url.removeprefix(f"{current}/")
    return {
        "kind": kind,
        "title": text[f"{kind}_title"],
        "text": text[kind],
        "source_url": get_relative_url(english or ".", page.url or "."),
        "read_source": text["read_source"],
        "contribute_url": f"{repository}/blob/main/{text['contributing']}",
        "contribute": text["contribute"],
    }


def on_page_context(context: dict, page: Page, config: MkDocsConfig, nav) -> dict:
    context["translation_banner"] = banner(page, config)
    return context
