"""The parts of the page around the content, in the reader's language, where neither Material nor
mkdocs-static-i18n translates them.

* The heading anchors' title ("Permanent link") is an option of the toc Markdown extension, and
  mkdocs-static-i18n refuses per-language ``markdown_extensions``. Each page takes it from
  ``extra.permalink_title``, which each language overrides in its i18n entry like the rest of ``extra``.
  (The palette toggle's names and the meta description are overridden per language in mkdocs.yml itself:
  i18n supports ``theme`` and ``site_description`` there.)
* The 404 page. MkDocs writes ``404.html`` to the site's root once per language, so without this the
  last language built wins for every reader, and its language menu keeps whatever links the last page
  built left in ``config.extra.alternate`` (a notebook). GitHub Pages serves one 404 page for every
  address, so it is the default language's, in that language's page frame, and it speaks to the reader
  of every language: a heading, a sentence and a link to the home page in each language that has its own
  ``extra.not_found`` text. Its language menu leads to each language's home page.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs_static_i18n.plugin import I18n

NOT_FOUND = "404.html"


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    # MkDocs hands mdx_configs to a new Markdown instance for every page, so this takes effect on this page.
    config.mdx_configs.setdefault("toc", {})["permalink_title"] = config.extra["permalink_title"]
    return markdown


def on_template_context(context: dict[str, Any], template_name: str, config: MkDocsConfig) -> dict[str, Any]:
    if template_name != NOT_FOUND:
        return context
    i18n: I18n = config.plugins["i18n"]
    # The language menu: each language's home page (i18n's own list, before any page changed it).
    config.extra["alternate"] = deepcopy(i18n.extra_alternate)
    homes = {alternate["lang"]: alternate["link"] for alternate in i18n.extra_alternate}
    default_text = config.extra["not_found"]
    messages = []
    for language in i18n.config.languages:
        text = (language.extra or {}).get("not_found")
        if language.locale == i18n.default_language:
            text = default_text
        if language.locale in homes and text:
            messages.append({"lang": language.locale, "home": homes[language.locale], **text})
    context["not_found_messages"] = messages
    return context


def on_post_template(output: str, template_name: str, config: MkDocsConfig) -> str:
    """Only the default language's build writes 404.html (MkDocs skips a template that renders empty)."""
    i18n: I18n = config.plugins["i18n"]
    if template_name == NOT_FOUND and i18n.current_language != i18n.default_language:
        return ""
    return output
