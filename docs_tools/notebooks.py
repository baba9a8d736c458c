"""Generate a Jupyter notebook for each chapter page, in both languages, into ``docs/<lang>/notebooks/``.

    python3 dev.py notebooks           # rewrite the notebooks
    python3 dev.py notebooks --check   # exit 1 if a committed notebook is out of date

The chapter pages are the one source of truth: a notebook is its page cut into cells. Prose becomes
Markdown cells, each ```python block a code cell, and the ```output block under it that cell's
stored output, the very output the test suite verified on the page (so the site renders notebooks
without executing them, and ``tests/pages/test_notebooks.py`` runs every notebook in a fresh kernel and
compares). Library source shown on a page is not copied into the notebook: a note points to it in
``attention_lib``, which the notebook imports. Links to other pages point to the published site, and
figures travel inside the notebook as attachments, so a downloaded notebook or one opened in Colab
reads the same as the page. Its first code cell installs from PyPI the versions of ``attention_lib`` and
of its exercises' checker ``attention_exercises`` that the pages were checked with (their ``__version__``)
where other versions, or none, are installed; in a Chinese notebook it also sets the checker's language.
"""

from __future__ import annotations

import ast
import base64
import functools
import html
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4
from sybil import Document, Region

from docs_tools import config, generated, records
from docs_tools.pages import (
    BUG,
    CHECK_CALL,
    HEADING,
    INCLUDE,
    INTERACTIVE,
    OUTPUT,
    PREDICT,
    PREDICT_BLOCK,
    RUN,
    SKIP,
    TRACEBACK,
    Exercise,
    answer_stub,
    exercises,
    fenced_blocks,
    predictions,
    shown_outputs,
    skipped,
)
from docs_tools.project import DOCS, ROOT

#: The chapters that have a notebook (the navigation's notebooks/ entries), in the languages whose pages all
#: exist, all read from mkdocs.yml.
CHAPTERS = tuple(config.notebook_chapters())
LANGUAGES = tuple(config.complete_locales())
#: A figure on a page: each is there twice, for the light palette (``#only-light``) and the dark one.
IMAGE = re.compile(
    # alt text may hold brackets one level deep (W_query.weight[0:2])
    r"!\[(?P<alt>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\.\./assets/figures/(?P<name>[\w.-]+\.svg)(?P<palette>#only-(?:light|dark))?\)"
    r"(?:\{[^}]*\})?\n?"
)
LINK = re.compile(r"\]\((?P<page>[\w-]+)\.md(?P<anchor>#[\w.-]+)?\)")
NOTEBOOK_LINK = re.compile(r"\]\(notebooks/(?P<page>[\w-]+)\.ipynb\)")
ADMONITION = re.compile(r'^(?:!!!|\?\?\?\+?) (?P<kind>\w+)(?: "(?P<title>[^"]*)")?\n(?P<body>(?:(?: {4}.*)?\n)*)', re.M)


def _words(lang: str) -> config.Settings:
    """The notebook's words in ``lang`` (``extra.notebook`` in mkdocs.yml, overridden per language)."""
    return config.extra(lang)["notebook"]


#: The packages a notebook installs, each with the folder its project is in (the repository's tag
#: ``<name>-v<version>`` holds it; CONTRIBUTING.md, "Releasing").
PACKAGES = {"attention_lib": ".", "attention_exercises": "exercises"}
#: The packages a page may import beyond those two, each with the requirement the test suite runs the page with
#: (pyproject.toml's ``test`` extra: a test compares): its notebook installs that where another major version, or
#: none, is installed. Colab has transformers preinstalled; elsewhere a reader may have another major version.
EXTRAS = {"transformers": "transformers>=5,<6"}
#: An import statement's first module, at the start of a line of code.
IMPORT = re.compile(r"^\s*(?:from|import)\s+(?P<name>\w+)", re.M)


def version(name: str = "attention_lib") -> str:
    """``__version__`` of ``name`` as this checkout's source states it, read without importing the package
    (and torch with it)."""
    module = ast.parse((ROOT / PACKAGES[name] / name / "__init__.py").read_text(encoding="utf-8"))
    (value,) = [
        ast.literal_eval(node.value)
        for node in module.body
        if isinstance(node, ast.Assign) and [ast.unparse(target) for target in node.targets] == ["__version__"]
    ]
    return value


def _folder(repository: str) -> str:
    """The folder ``git clone`` makes for ``repository``."""
    return repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


def _wrapped(text: str, width: int = 62) -> list[str]:
    """``text`` cut into pieces of at most ``width`` characters, at spaces, each piece keeping its space."""
    pieces, line = [], ""
    for word in text.split(" "):
        if line and len(line) + len(word) + 1 > width:
            pieces.append(line + " ")
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*pieces, line]


def extras(sources: list[str]) -> list[str]:
    """The packages of `EXTRAS` that the code ``sources`` (a page's blocks that run) imports, in order."""
    imported = {match["name"] for source in sources for match in IMPORT.finditer(source)}
    return [name for name in EXTRAS if name in imported]


def _major(requirement: str) -> str:
    """The major version a requirement such as ``transformers>=5,<6`` allows, and only that one."""
    found = re.fullmatch(r"[\w-]+>=(\d+)(?:\.0)*,<(\d+)", requirement)
    if found is None or int(found[2]) != int(found[1]) + 1:
        raise ValueError(f"{requirement}: an extra package is required as name>=N,<N+1, one major version")
    return found[1]


def install_cell(lang: str, repository: str, extra: list[str] | tuple[str, ...] = ()) -> str:
    """The notebook's first code cell: both packages at the pages' versions, from PyPI, unless this Python
    has those versions already (where the test suite runs the notebooks, it does nothing). Its comment gives
    the way round an unreachable PyPI: the same versions from the repository's release tags. Then each of the
    ``extra`` packages the page imports (`EXTRAS`), where another major version or none is installed. A Chinese
    notebook then sets the checker's language, once for all its checks."""
    pinned = {name: version(name) for name in PACKAGES}
    fallback = [
        f'# %pip install "{name} @ git+{repository}@{name}-v{pinned[name]}'
        + ("" if folder == "." else f"#subdirectory={folder}")
        + '"'
        for name, folder in PACKAGES.items()
    ]
    wanted = ", ".join(f'"{name}": "{pinned[name]}"' for name in PACKAGES)
    cell = (
        f"# {_words(lang)['fallback']}\n" + "\n".join(fallback) + "\nimport importlib.metadata\n\n\n"
        "def installed(name):\n"
        "    try:\n"
        "        return importlib.metadata.version(name)\n"
        "    except importlib.metadata.PackageNotFoundError:\n"
        "        return None\n\n\n"
        f"wanted = {{{wanted}}}\n"
        "if any(installed(name) != version for name, version in wanted.items()):\n"
        "    %pip install --quiet " + " ".join(f"{name}=={pinned[name]}" for name in PACKAGES) + "\n"
        # %pip reports a failure and goes on: say at once what failed and what to do, not at the first import.
        "    missing = [name for name, version in wanted.items()\n"
        "               if installed(name) != version]\n"
        "    if missing:\n"
        "        raise RuntimeError(\n"
        + "".join(
            f"            {line!r}\n"
            for line in _wrapped(
                _words(lang)["not_installed"].format(repository=repository, folder=_folder(repository))
            )
        )
        + "            .format(missing=', '.join(missing))\n"
        "        )\n"
    )
    for name in extra:
        requirement = EXTRAS[name]
        cell += (
            f"# {_words(lang)['extra_package'].format(requirement=requirement)}\n"
            f'if (installed("{name}") or "").split(".")[0] != "{_major(requirement)}":\n'
            f'    %pip install --quiet "{requirement}"\n'
        )
    if lang != "en":
        cell += (
            f'\nfrom attention_exercises import set_language\n\nset_language("{lang}")  # {_words(lang)["language"]}\n'
        )
    return cell


def settings() -> tuple[str, str]:
    """The published site's address and the repository's, both read from ``mkdocs.yml``."""
    return config.addresses()


def page_url(site_url: str, lang: str, page: str, anchor: str = "") -> str:
    return site_url + config.url(lang, f"{page}.md") + anchor


def notebook_url(site_url: str, lang: str, page: str) -> str:
    return site_url + config.url(lang, f"notebooks/{page}.md")


def _markdown(
    text: str, lang: str, site_url: str, heading_ids: list[str], page: str
) -> tuple[str, dict[str, dict[str, str]]]:
    """A page's prose as notebook Markdown: links to the site, figures as attachments, no MkDocs syntax.

    The headings' explicit ids are appended to ``heading_ids``: Markdown in a notebook has no syntax for
    them, so they travel in the notebook's metadata (hooks/notebooks_after_i18n.py puts them back).
    """
    attachments: dict[str, dict[str, str]] = {}

    def heading(match: re.Match[str]) -> str:
        if match["id"] is None:
            return match.group(0)  # no explicit id to keep (every chapter heading has one: a test checks it)
        heading_ids.append(match["id"])
        return f"{match['hashes']} {match['title']}"

    def image(match: re.Match[str]) -> str:
        if match["palette"] == "#only-dark":
            return ""  # a notebook has one palette: Jupyter's and Colab's white page
        name = match["name"]
        svg = (DOCS / "assets" / "figures" / name).read_bytes()
        attachments[name] = {"image/svg+xml": base64.b64encode(svg).decode("ascii")}
        return f"![{match['alt']}](attachment:{name})" + ("\n" if match[0].endswith("\n") else "")

    def admonition(match: re.Match[str]) -> str:
        kinds = _words(lang)["kinds"]
        title = match["title"] or kinds.get(match["kind"], match["kind"].title())
        body = [line[4:] for line in match["body"].rstrip("\n").split("\n")]
        return "\n".join([f"> **{title}**", ">", *(f"> {line}".rstrip() for line in body)]) + "\n"

    def section_url(match: re.Match[str]) -> str:
        """The page's address at the section that holds ``match``: its nearest heading above with an id."""
        above = [heading["id"] for heading in HEADING.finditer(text, 0, match.start()) if heading["id"]]
        return page_url(site_url, lang, page, "#" + (above or heading_ids)[-1])

    def interactive(match: re.Match[str]) -> str:
        # An interactive piece runs on the site only: the notebook links to it, under the section's heading,
        # and keeps the page's figures.
        return _words(lang)["interactive"].format(url=section_url(match))

    def predict(match: re.Match[str]) -> str:
        # The page checks the reader's choice and explains each one; the notebook lists the choices, whose
        # answer is the cell below, and links to the page for the explanations.
        (question,) = predictions(match[0])
        url = section_url(match)
        choices = [f"{chr(ord('A') + number)}. {choice.label}" for number, choice in enumerate(question.choices)]
        return "\n\n".join(
            [question.question, "\n".join(f"- {choice}" for choice in choices), _words(lang)["predict"].format(url=url)]
        )

    text = SKIP.sub("", text)
    text = PREDICT_BLOCK.sub(predict, text)
    text = INTERACTIVE.sub(interactive, text)
    text = HEADING.sub(heading, text)
    text = IMAGE.sub(image, text)
    text = LINK.sub(lambda match: f"]({page_url(site_url, lang, match['page'], match['anchor'] or '')})", text)
    # A link to a chapter's notebook: its page on the site.
    text = NOTEBOOK_LINK.sub(lambda match: f"]({notebook_url(site_url, lang, match['page'])})", text)
    text = ADMONITION.sub(admonition, text)
    return text.strip("\n"), attachments


def _outputs(expected: str | None) -> tuple[list[nbformat.NotebookNode], bool]:
    """The stored outputs of a code cell, from the page's output block, and whether the cell raises."""
    if expected is None:
        return [], False
    lines = expected.rstrip("\n").split("\n")
    error = None
    if TRACEBACK in lines:
        error, lines = lines[-1], lines[: lines.index(TRACEBACK)]
    elif re.match(r"^\w+(Error|Exception|Warning): ", lines[-1]) and not lines[-1].startswith("tensor"):
        error, lines = lines[-1], lines[:-1]
    outputs = []
    if lines:
        outputs.append(v4.new_output("stream", name="stdout", text="\n".join(lines) + "\n"))
    if error is not None:
        ename, _, evalue = error.partition(": ")
        outputs.append(v4.new_output("error", ename=ename, evalue=evalue, traceback=[error]))
    return outputs, error is not None


def _markdown_cell(source: str, attachments: dict[str, dict[str, str]]) -> nbformat.NotebookNode:
    return v4.new_markdown_cell(source, **({"attachments": attachments} if attachments else {}))


def notebook(page: str, lang: str) -> nbformat.NotebookNode:
    """The notebook of one chapter page (nbformat 4)."""
    site_url, repository = settings()
    path = DOCS / lang / f"{page}.md"
    # A translated page's front matter is its freshness record (docs_tools/records.py), not content.
    text = records.FRONT_MATTER.sub("", path.read_text(encoding="utf-8"), count=1)
    document = Document(text, str(path))
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    # The code a reader runs: neither library source nor code shown without running (skipped).
    runs = [
        str(block.lexemes["source"]) for block in blocks if block.lexemes["info"] == RUN and not skipped(text, block)
    ]
    words = _words(lang)
    first = re.match(r"# (.*?)\s*\{\s*#([\w-]+)", text)
    if first is None:
        raise ValueError(f"{path}: a chapter page starts with its title and the title's id: # Title {{ #id }}")
    title, title_id = first.groups()
    heading_ids = [title_id]
    notebook_path = f"docs/{lang}/notebooks/{page}.ipynb"
    colab = config.colab_url(notebook_path)
    cells = [
        v4.new_markdown_cell(
            f"# {title}\n\n"
            + words["from_page"].format(title=title, url=page_url(site_url, lang, page))
            + f" [{words['colab']}]({colab})"
        ),
        v4.new_markdown_cell(words["setup"].format(version=version(), checker=version("attention_exercises"))),
        v4.new_code_cell(install_cell(lang, repository, extras(runs))),
    ]
    position = text.index("\n", text.index("# ")) + 1  # the page's own title is the notebook's first cell
    # The exercises' solutions are left out (one click away on the page): in their place, a write-it exercise
    # gets a cell to write the answer in and one that checks it, a predict-the-output exercise the code to run.
    page_exercises = exercises(text)
    solutions = [exercise for exercise in page_exercises if exercise.solution]
    items: list[tuple[int, Region | Exercise]] = [
        (block.start, block) for block in blocks if not any(_within(block, e.solution) for e in solutions)
    ]
    items += [(exercise.solution[0], exercise) for exercise in solutions]
    # The second block of an output that a fold holds (shown_outputs): a cell of its own, folded as on the page.
    folds = {
        block.start: output
        for output in outputs.values()
        if "folded" in output.lexemes
        for block in blocks
        if output.start < block.start < output.end
    }
    for start, item in sorted(items, key=lambda pair: pair[0]):
        if isinstance(item, Exercise):
            prose, attachments = _markdown(text[position:start], lang, site_url, heading_ids, page)
            position = item.solution[1]
            if prose:
                cells.append(_markdown_cell(prose, attachments))
            cells += _exercise_cells(item, [b for b in blocks if _within(b, item.solution)], lang)
            continue
        block = item
        info = block.lexemes["info"]
        if info not in (RUN, OUTPUT):
            continue  # other fences (bash, text) stay in the prose around them
        if info == RUN and skipped(text, block) and not INCLUDE.match(str(block.lexemes["source"]).strip()):
            continue  # shown, not run (it downloads, say): it stays in the prose too, never a cell to run
        if block.start in folds:
            position = block.end
            cells.append(v4.new_markdown_cell(_folded(folds[block.start])))
            continue
        prose, attachments = _markdown(text[position : block.start], lang, site_url, heading_ids, page)
        position = block.end
        if prose:
            cells.append(_markdown_cell(prose, attachments))
        if info == OUTPUT:
            continue  # stored with the code cell before it
        source = str(block.lexemes["source"]).rstrip("\n")
        include = INCLUDE.match(source)
        if include:
            name = include["name"]
            api = page_url(site_url, lang, "api", f"#attention_lib.{Path(include['path']).stem}.{name}")
            cells.append(
                v4.new_markdown_cell(words["source"].format(name=name, url=page_url(site_url, lang, page), api=api))
            )
            continue
        output = outputs.get(block.start)
        shown = None if output is None else output.lexemes.get("shown", output.lexemes["source"])
        stored, raises = _outputs(None if shown is None else str(shown))
        metadata: dict[str, Any] = {"tags": ["raises-exception"]} if raises else {}
        bug = next((e for e in page_exercises if e.kind == BUG and _within(block, e.section)), None)
        if bug is not None and any(call["id"] == bug.id for call in CHECK_CALL.finditer(source)):
            metadata["attention_docs"] = {"exercise": bug.id, "role": "bug"}  # the code the reader fixes
        cells.append(v4.new_code_cell(source, outputs=stored, metadata=metadata))
    prose, attachments = _markdown(text[position:], lang, site_url, heading_ids, page)
    if prose:
        cells.append(_markdown_cell(prose, attachments))
    for number, cell in enumerate(cells):
        cell["id"] = f"{page}-{number}"  # stable ids (nbformat draws random ones), so regenerating changes nothing
    metadata = {
        "attention_docs": {"source": f"docs/{lang}/{page}.md", "heading_ids": heading_ids},
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return v4.new_notebook(cells=cells, metadata=metadata)


def _folded(output: Region) -> str:
    """The folded part of an output, closed as on the page (HTML that Jupyter and the site both fold)."""
    title = html.escape(output.lexemes["title"])
    return f"<details><summary>{title}</summary><pre>{html.escape(output.lexemes['folded'].rstrip())}</pre></details>"


def _within(block: Region, span: tuple[int, int]) -> bool:
    return span[0] <= block.start < span[1]


def _exercise_cells(exercise: Exercise, blocks: list[Region], lang: str) -> list[nbformat.NotebookNode]:
    """What stands in a notebook for an exercise's folded solution."""
    code = [str(block.lexemes["source"]).rstrip("\n") for block in blocks if block.lexemes["info"] == RUN]

    def tagged(source: str, role: str) -> nbformat.NotebookNode:
        return v4.new_code_cell(source, metadata={"attention_docs": {"exercise": exercise.id, "role": role}})

    if exercise.kind == PREDICT:
        return [tagged(source, "predict") for source in code]  # run it once you have made your guess
    if exercise.kind == BUG:
        return []  # the reader fixes the code above, which calls the checker itself
    if exercise.answer is None:  # a write-it exercise is one whose solution calls check() with the answer
        raise ValueError(f"exercise {exercise.id}: its solution does not call check() with the answer's name")
    stub = answer_stub(code[0], exercise.answer, _words(lang)["your_code"])
    # The language was set once, in the setup cell.
    return [
        tagged(stub.rstrip("\n"), "answer"),
        tagged(f'check("{exercise.id}", {exercise.answer})', "check"),
    ]


def render(page: str, lang: str) -> str:
    nb = notebook(page, lang)
    nbformat.validate(nb)  # against nbformat's own schema: a malformed notebook fails here, not in Jupyter
    return nbformat.writes(nb) + "\n"


def target(page: str, lang: str) -> Path:
    return DOCS / lang / "notebooks" / f"{page}.ipynb"


def outputs() -> dict[Path, Callable[[], str]]:
    """Every chapter's notebook in every language whose page exists. A page not translated yet has no notebook in
    that language until it is: the site shows the English one under the banner meanwhile, and the translation
    checks and the notebooks' tests name the missing page (a pull request adds both languages at once)."""
    return {
        target(page, lang): functools.partial(render, page, lang)
        for lang in LANGUAGES
        for page in CHAPTERS
        if (DOCS / lang / f"{page}.md").exists()
    }


def stale_notebooks() -> list[str]:
    return [path.relative_to(ROOT).as_posix() for path in generated.stale(outputs())]


def main(argv: list[str]) -> int:
    return generated.main(argv, outputs(), __doc__.splitlines()[0], "python3 dev.py notebooks")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
