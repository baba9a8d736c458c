"""Predict-then-reveal: a predict-the-output exercise's question, written in the page as a block
(``<div data-predict="ID" data-answer="N" markdown>``, format in docs_tools/pages.py), becomes a form the reader
answers by picking one choice:

    <form class="predict" data-predict="ID" data-answer="N">
      <fieldset><legend>the question</legend> one radio button per choice, labelled </fieldset>
      <button type="submit">Check</button>  a status line  each choice's explanation, hidden
    </form>

predict.js shows the explanation of the choice picked, remembers the reader's answers in their browser
(localStorage, by question id, so both languages share them) and counts, under the chapter's Exercises heading,
how many the reader got right at the first try. The explanations are hidden until picked, and kept out of the
search index (a result's excerpt would give the answer away). The page's words are ``extra.interactive.predict``
in mkdocs.yml. The notebooks list the choices and link here (docs_tools/notebooks.py).
"""

from __future__ import annotations

import json
import re
from html import escape

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

SCRIPT = "assets/javascripts/predict.js"
CSS = "assets/stylesheets/predict.css"
#: The block as Python-Markdown renders it (md_in_html): the question's paragraph, then a list, one item a choice:
#: the label's paragraph and the explanation's. md_in_html writes the attributes in either order.
BLOCK = re.compile(r"<div (?P<attributes>[^>]*\bdata-predict=[^>]*)>\n(?P<body>.*?)\n</div>", re.S)
ATTRIBUTE = re.compile(r'(?P<name>[\w-]+)="(?P<value>[^"]*)"')
QUESTION = re.compile(r"^<p>(?P<question>.*?)</p>\n<ul>\n(?P<items>.*)</ul>$", re.S)
ITEM = re.compile(r"<li>\n?<p>(?P<label>.*?)</p>\n?(?P<why>.*?)</li>\n?", re.S)
EXERCISES = re.compile(r'(<h2 id="exercises"[^>]*>.*?</h2>)', re.S)


def _form(match: re.Match[str], page: Page, strings: str) -> str:
    attributes = {m["name"]: m["value"] for m in ATTRIBUTE.finditer(match["attributes"])}
    id, answer = attributes["data-predict"], attributes.get("data-answer", "")
    parts = QUESTION.match(match["body"].strip())
    items = list(ITEM.finditer(parts["items"])) if parts else []
    if parts is None or not items or "".join(m[0] for m in items) != parts["items"]:
        raise PluginError(f"{page.file.src_uri}: the predict block {id} is not a question and a list of choices")
    if not answer.isdigit() or not 1 <= int(answer) <= len(items):
        raise PluginError(f"{page.file.src_uri}: the predict block {id} has data-answer={answer!r}")
    choices = "".join(
        f'<label class="pr-choice"><input type="radio" name="{id}" value="{number}">'
        f"<span>{item['label']}</span></label>"
        for number, item in enumerate(items, 1)
    )
    explanations = "".join(
        f'<div class="pr-why" data-choice="{number}" hidden>{item["why"].strip()}</div>'
        for number, item in enumerate(items, 1)
    )
    return (
        f'<form class="predict" data-predict="{id}" data-answer="{answer}" data-strings="{strings}" '
        f'data-pagefind-ignore="all">'
        f'<fieldset><legend>{parts["question"]}</legend><div class="pr-choices">{choices}</div></fieldset>'
        f'<div class="pr-actions"><button type="submit" class="pr-check"></button>'
        f'<button type="button" class="pr-forget" hidden></button></div>'
        f'<p class="pr-verdict" role="status"></p>{explanations}</form>'
    )


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    words = config.extra["interactive"]["predict"]  # the page's language's
    strings = escape(json.dumps(words, ensure_ascii=False, separators=(",", ":")), quote=True)
    html, count = BLOCK.subn(lambda match: _form(match, page, strings), html)
    if not count:
        return html
    # The chapter's count of right answers, under its Exercises heading; the script, once, after the last form
    # (every form is in the document when it runs, and a stored answer is shown before anything below is laid out).
    html = EXERCISES.sub(r'\1\n<p class="pr-summary" data-predict-summary hidden></p>', html, count=1)
    script = get_relative_url(SCRIPT, page.url)
    last = html.rindex("</form>") + len("</form>")
    html = f'{html[:last]}\n<script src="{script}"></script>{html[last:]}'
    css = vars(page).get("interactive_css") or []
    vars(page)["interactive_css"] = [*css, CSS]  # overrides/main.html links each in the head
    return html
