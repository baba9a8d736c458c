"""Let mkdocs-jupyter see the notebook files that mkdocs-static-i18n hands to MkDocs.

mkdocs-static-i18n rebuilds the whole file list as the last ``on_files`` handler (priority -100),
with plain ``File`` objects. That drops the notebook files mkdocs-jupyter had marked for rendering,
and MkDocs then copies each ``.ipynb`` through as its raw JSON under ``index.html``, with a green
``--strict`` build (ultrabug/mkdocs-static-i18n#198). Running mkdocs-jupyter's own ``on_files`` once
more, after i18n, marks them again. ``tests/pages/test_notebooks.py`` checks the rendered pages.

It also gives mkdocs-jupyter's cache of rendered notebooks one folder per language (see ``on_files``).

The same hook also finishes the notebook pages that mkdocs-jupyter renders (``tests/site/test_notebook_pages.py``):
their headings get the chapter's ids, the CSS that mkdocs-jupyter inlines into every page moves into one
shared stylesheet, the code cells' copy button speaks the page's language, and i18n's sitemap lists them.
"""

from __future__ import annotations

import ast
import html as html_module
import json
import os
import re
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink
from mkdocs_jupyter.plugin import NotebookFile, Plugin
from mkdocs_static_i18n.plugin import I18n

from docs_tools import config as site_config

HEADING = re.compile(r'<h(?P<level>[1-6]) id="(?P<id>[^"]*)"(?P<rest>[^>]*>.*?</h(?P=level)>)', re.DOTALL)
STYLE = re.compile(r"<style[^>]*>(?P<css>.*?)</style>", re.DOTALL)
# mkdocs-jupyter's template (templates/mkdocs_html/notebook.html.j2) puts its styles before the notebook,
# between these two markers, and its copy buttons inside it.
WRAPPER_START, WRAPPER_END = '<div class="jupyter-wrapper">', "</div> <!-- jupyter-wrapper -->"
COPY_LABEL, COPIED = 'aria-label="Copy to Clipboard"', '<span class="notice" hidden="">Copied!</span>'
#: Where the CSS that mkdocs-jupyter inlines into every notebook page is served from, once for the whole site
#: (overrides/main.html links it on notebook pages).
NOTEBOOK_CSS = "assets/stylesheets/jupyter.css"
#: This build's notebook CSS: the same for every notebook page, written once after the build.
_shared_css: dict[str, str] = {}
#: mkdocs-jupyter's cache folder as mkdocs.yml sets it, before on_files gives each language its own.
_cache_root: dict[str, str] = {}


def _url(src_uri: str, locale: str, default: str) -> str:
    """The URL of the notebook ``src_uri`` (``zh/notebooks/x.ipynb``) in the language ``locale``."""
    page = PurePosixPath(*PurePosixPath(src_uri).with_suffix("").parts[1:])
    return f"{page}/" if locale == default else f"{locale}/{page}/"


@event_priority(-110)  # after mkdocs-static-i18n's -100
def on_files(files: Files, config: MkDocsConfig) -> Files:
    jupyter: Plugin = config.plugins["mkdocs-jupyter"]
    i18n: I18n = config.plugins["i18n"]
    default = i18n.default_language
    # mkdocs-jupyter caches each rendered notebook and, after a build, deletes every entry that build did not
    # use. i18n builds each language on its own, so the Chinese build deleted the English entries and the
    # next English build the Chinese ones: no notebook was ever served from the cache, and every build
    # converted all of them again (about 10 of a warm build's 18 seconds). One folder per language.
    root = _cache_root.setdefault("dir", jupyter.config["cache_dir"])
    jupyter.config["cache_dir"] = os.path.join(root, i18n.current_language)
    # In place: i18n keeps using its own Files object for the rest of the build.
    for file in [file for file in files if jupyter.should_include(file) and not isinstance(file, NotebookFile)]:
        notebook = NotebookFile(file, **config)
        # Keep the place i18n gave the page (notebooks/x/ for English, zh/notebooks/x/ for Chinese), not
        # the one mkdocs-jupyter derives from the source path (en/notebooks/x/).
        notebook.dest_path, notebook.abs_dest_path, notebook.url = file.dest_path, file.abs_dest_path, file.url
        if i18n.current_language != PurePosixPath(file.src_uri).parts[0]:
            # i18n's English fallback for a notebook not translated yet leaves it at the English page's place,
            # where it would overwrite that page: move it under the language being built.
            notebook.url = _url(file.src_uri, i18n.current_language, default)
            notebook.dest_path = notebook.url + "index.html"
            notebook.abs_dest_path = os.path.normpath(os.path.join(config.site_dir, notebook.dest_path))
        # i18n found no other-language versions of a file it did not take for a page, so the language
        # switcher would jump to the other language's home page; point it at the same notebook instead.
        notebook.alternates = {
            # page=None: i18n's sitemap.xml template then builds the address from the url.
            language.locale: SimpleNamespace(
                locale=language.locale, url=_url(file.src_uri, language.locale, default), page=None
            )
            for language in i18n.config.languages
        }
        files.remove(file)
        files.append(notebook)
    # i18n's sitemap.xml lists the documentation pages it saw in its own on_files, before the notebooks were
    # pages: give it this language's list again, notebooks included.
    i18n.i18n_files_per_language[i18n.current_language] = files.documentation_pages()
    return files


def _shared_stylesheet(html: str, src_uri: str) -> str:
    """Take the ``<style>`` blocks that mkdocs-jupyter inlines into every notebook page out of ``html``.

    mkdocs-jupyter has no option to link its CSS instead (its template, including the styles, is fixed:
    danielfrg/mkdocs-jupyter#178), so every notebook page carried about 595 KB of the same JupyterLab and
    code-colour CSS. The blocks before the notebook go, once, into NOTEBOOK_CSS; the block that the plugin
    appends after the notebook (the code colours again, written as a Python list) is dropped. Styles inside
    the notebook, which a cell's output may carry, stay where they are.
    """
    start, end = html.find(WRAPPER_START), html.rfind(WRAPPER_END)
    if start == -1 or end == -1:
        raise PluginError(f"{src_uri}: mkdocs-jupyter's notebook wrapper not found; has its template changed?")
    end += len(WRAPPER_END)
    head, notebook, tail = html[:start], html[start:end], html[end:]
    css = "\n".join(match["css"].strip() for match in STYLE.finditer(head)) + "\n"
    for match in STYLE.finditer(tail):
        repeated = ast.literal_eval(match["css"].strip())
        if not all(block.strip() in css for block in repeated):
            raise PluginError(f"{src_uri}: mkdocs-jupyter appends CSS that is not in its template's styles")
    if _shared_css.setdefault("css", css) != css:
        raise PluginError(f"{src_uri}: mkdocs-jupyter's CSS differs between notebook pages; one file cannot serve them")
    return STYLE.sub("", head) + notebook + STYLE.sub("", tail)


def _localise_copy_buttons(html: str, src_uri: str, config: MkDocsConfig) -> str:
    """Label the code cells' copy buttons in the page's language, with Material's own words for it.

    mkdocs-jupyter writes them in English on every page; Material's code blocks say the same in the
    page's language (partials/languages/), and so do these now.
    """
    buttons = html.count("<clipboard-copy")
    if html.count(COPY_LABEL) != buttons or html.count(COPIED) != buttons:
        raise PluginError(f"{src_uri}: mkdocs-jupyter's copy button has changed; update hooks/notebooks_after_i18n.py")
    lang = config.theme.get_env().get_template("partials/language.html").make_module({"config": config})
    # Material's macro t(key): Jinja makes a template's macros attributes of its module when it runs it.
    translate = vars(lang)["t"]
    copy, copied = (html_module.escape(str(translate(key)).strip()) for key in ("clipboard.copy", "clipboard.copied"))
    html = html.replace(COPY_LABEL, f'aria-label="{copy}" title="{copy}"')
    return html.replace(COPIED, f'<span class="notice" hidden="">{copied}</span>')


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Give a notebook page's headings the explicit ids of its chapter page.

    mkdocs-jupyter derives heading ids from the heading text with an ASCII-only slug, so every Chinese
    heading gets an empty id; duplicate empty ids also break the search index. The notebook carries
    the chapter's ids in its metadata (docs_tools/notebooks.py), one per heading, in order.
    """
    if not isinstance(page.file, NotebookFile):
        return html
    html = _localise_copy_buttons(_shared_stylesheet(html, page.file.src_uri), page.file.src_uri, config)
    metadata = json.loads(Path(page.file.abs_src_path).read_text(encoding="utf-8"))["metadata"]["attention_docs"]
    heading_ids = metadata["heading_ids"]
    found = len(HEADING.findall(html))
    if found != len(heading_ids):
        raise PluginError(
            f"{page.file.src_uri}: {found} headings, but the metadata names {len(heading_ids)} heading ids;"
            " run docs_tools/notebooks.py"
        )
    ids = iter(heading_ids)
    renamed: list[tuple[str, str]] = []

    def rename(match: re.Match[str]) -> str:
        new = next(ids)
        inner = re.sub(r'<a class="anchor-link".*?</a>', "", match["rest"].split(">", 1)[1].rsplit("</h", 1)[0])
        renamed.append((new, html_module.unescape(re.sub(r"<[^>]+>", "", inner)).strip()))
        anchor = match["rest"].replace(f'href="#{match["id"]}"', f'href="#{new}"', 1)
        return f'<h{match["level"]} id="{new}"{anchor}'

    html = HEADING.sub(rename, html)
    headings_in_order = iter(renamed)

    def retitle(items: list[AnchorLink]) -> None:
        # The table of contents lists the same headings; mkdocs-jupyter's titles also lose inline code.
        for item in items:
            item.id, item.title = next(headings_in_order)
            retitle(item.children)

    retitle(page.toc.items)
    # The notebook is generated from its chapter page: "edit this page" opens that page's source (without
    # edit_uri in mkdocs.yml, MkDocs gives no page an edit link).
    if config.edit_uri:
        page.edit_url = config.edit_uri + metadata["source"].removeprefix("docs/")
    return html


def on_page_context(context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation) -> dict[str, Any]:
    # The "Open in Colab" button (overrides/main.html) links where the notebook's own first cell does.
    if getattr(page, "nb_url", None):
        context["colab_url"] = site_config.colab_url(f"docs/{page.file.src_uri}")
    return context


def on_post_build(config: MkDocsConfig) -> None:
    """Write the notebook pages' shared stylesheet (every language's build writes the same file)."""
    if "css" in _shared_css:
        path = Path(config.site_dir) / NOTEBOOK_CSS
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_shared_css["css"], encoding="utf-8")
