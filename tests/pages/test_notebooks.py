"""The notebooks: generated from the chapter pages, run top to bottom in a fresh kernel (rendered on the site:
tests/site/test_notebook_rendering.py)."""

from __future__ import annotations

import html
import importlib.metadata
import itertools
import json
import re
from pathlib import Path
from types import SimpleNamespace

import attention_exercises
import nbformat
import pytest
import torch
from attention_exercises import diagnose
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient
from sybil import Document

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10; pytest depends on tomli there
    import tomli as tomllib

import attention_lib
from docs_tools import config as site_config
from docs_tools import notebooks as make_notebooks
from docs_tools.kernels import ForkedKernelManager
from docs_tools.outputs import compare_output
from docs_tools.pages import CHECK_CALL, PREDICT, RUN, WRITE, exercises, fenced_blocks, shown_outputs, skipped

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = [(lang, page) for lang in make_notebooks.LANGUAGES for page in make_notebooks.CHAPTERS]
IDS = [f"{lang}/{page}" for lang, page in NOTEBOOKS]


def _printed(outputs: list[dict]) -> str:
    """What a cell showed, in the form the pages' output blocks use."""
    text = ""
    for output in outputs:
        if output["output_type"] == "stream":
            text += output["text"]
        elif output["output_type"] == "error":
            text += f"{output['ename']}: {output['evalue']}\n"
        elif output["output_type"] == "display_data" and _checks(output):
            # The checker's result, which a notebook shows with its hint folded: what it printed is the plain text.
            text += output["data"]["text/plain"] + "\n"
        elif output["output_type"] != "execute_result":
            # A display the page never shows. (A cell's last bare expression, such as `dropout.train()`,
            # is echoed by Jupyter but not by the script the page runs as: that one is left out.)
            text += f"<{output['output_type']}>\n"
    return text


def _checks(output: dict) -> bool:
    return re.match(r"[✓✗] exercise-", output.get("data", {}).get("text/plain", "")) is not None


def test_committed_notebooks_are_generated_from_the_current_pages() -> None:
    assert make_notebooks.stale_notebooks() == [], "run: python3 dev.py notebooks"


def test_the_repository_is_named_once() -> None:
    site_url, repository = make_notebooks.settings()
    config = site_config.config()
    assert config["edit_uri"].startswith(repository + "/"), "edit_uri and extra.repository name different repositories"
    assert site_url == config["site_url"]


def _execute(notebook, cwd: Path, *, allow_errors: bool = False) -> None:
    """Run ``notebook`` in ``cwd``, in a kernel of its own with nothing defined (forked from a process that has
    imported torch already, docs_tools.kernels)."""
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=allow_errors,
        kernel_manager_class=ForkedKernelManager,
        # A raising cell's traceback as its last line only: the output compared is that line; IPython's
        # default colours the source of every frame, 2.4 s for the one that raises deep inside torch.
        extra_arguments=["--InteractiveShell.xmode=Minimal"],
    )
    client.execute(cwd=str(cwd))


def _role(cell) -> str | None:
    return cell.get("metadata", {}).get("attention_docs", {}).get("role")


def _solutions(lang: str, page: str) -> dict[str, list[tuple[str, str]]]:
    """Each exercise's folded solution on the page: its code blocks, with their shown outputs."""
    source = ROOT / "docs" / lang / f"{page}.md"
    text = source.read_text(encoding="utf-8")
    document = Document(text, str(source))
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    return {
        exercise.id: [
            (str(block.lexemes["source"]).rstrip("\n"), str(outputs[block.start].lexemes["source"]))
            for block in blocks
            if block.lexemes["info"] == RUN and exercise.solution[0] <= block.start < exercise.solution[1]
        ]
        for exercise in exercises(text)
    }


def _filled_in(notebook, solutions: dict[str, list[tuple[str, str]]]) -> None:
    """The notebook as a reader who solved every exercise has it: each answer cell holds the solution (its
    call of the checker is the check cell's), each find-the-bug cell the fixed code."""
    for cell in notebook.cells:
        role = _role(cell)
        if role not in ("answer", "bug"):
            continue
        code = solutions[cell.metadata["attention_docs"]["exercise"]][-1 if role == "bug" else 0][0]
        if role == "answer":
            code = "\n".join(line for line in code.split("\n") if not CHECK_CALL.search(line)).rstrip()
        cell.source = code


@pytest.mark.parametrize(("lang", "page"), NOTEBOOKS, ids=IDS)
def test_notebook_runs_top_to_bottom_and_shows_what_its_page_shows(lang: str, page: str) -> None:
    """Run with the exercises solved, every cell shows the page's output, every check says ✓, and each
    predict-the-output cell prints the page's answer."""
    path = make_notebooks.target(page, lang)
    notebook = nbformat.read(path, as_version=4)
    stored = [_printed(cell.get("outputs", [])) for cell in notebook.cells]
    solutions = _solutions(lang, page)
    _filled_in(notebook, solutions)
    # A cell may raise only if it is tagged raises-exception (the page shows it raising).
    _execute(notebook, path.parent)
    predicted = {exercise: iter(blocks) for exercise, blocks in solutions.items()}
    for number, (cell, shown) in enumerate(zip(notebook.cells, stored, strict=True)):
        if cell.cell_type != "code":
            continue
        raised = any(output["output_type"] == "error" for output in cell.outputs)
        assert raised == ("raises-exception" in cell.metadata.get("tags", [])), f"cell {number}"
        role, printed = _role(cell), _printed(cell.outputs)
        if role in ("check", "bug"):
            exercise = cell.metadata["attention_docs"]["exercise"]
            assert printed.startswith(f"✓ {exercise}\n"), f"{lang}/{page}, cell {number}: {printed}"
            if lang == "zh":  # the setup cell set the checker's language, for the bugs' cells too
                assert re.search(r"[\u4e00-\u9fff]", printed), printed
            continue
        if role == "predict":
            shown = next(predicted[cell.metadata["attention_docs"]["exercise"]])[1]
        elif role == "answer":
            shown = ""
        problem = compare_output(shown, printed)
        assert problem is None, f"{lang}/{page}, cell {number}:\n{''.join(cell.source)}\n{problem}"


@pytest.mark.parametrize(("lang", "page"), NOTEBOOKS, ids=IDS)
def test_notebook_shows_the_pages_code_and_outputs(lang: str, page: str) -> None:
    """Every runnable block of the chapter page is a code cell, with the page's output, in order; the exercises'
    solutions are not there: a cell to write each answer in and one to check it take their place, and the
    code of a predict-the-output exercise comes without its output."""
    source = ROOT / "docs" / lang / f"{page}.md"
    text = source.read_text(encoding="utf-8")
    document = Document(text, str(source))
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    page_exercises = exercises(text)
    folded = [exercise.solution for exercise in page_exercises]
    # A fold's part of an output (a find-the-bug exercise's hint) is a folded cell of its own, after the code's.
    expected = [
        (
            str(block.lexemes["source"]).rstrip("\n"),
            str(outputs[block.start].lexemes.get("shown", outputs[block.start].lexemes["source"]))
            if block.start in outputs
            else "",
        )
        for block in blocks
        if block.lexemes["info"] == RUN
        and not str(block.lexemes["source"]).lstrip().startswith("--8<--")
        and not skipped(text, block)  # shown, not run: in the prose (test_a_block_shown_but_not_run_...)
        and not any(start <= block.start < end for start, end in folded)
    ]
    notebook = nbformat.read(make_notebooks.target(page, lang), as_version=4)  # texts stored as lists of lines, joined
    cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"][1:]  # after the install cell
    actual = [("".join(cell["source"]), _printed(cell["outputs"])) for cell in cells if _role(cell) in (None, "bug")]
    assert [code for code, _ in actual] == [code for code, _ in expected]
    for (code, shown), (_, stored) in zip(expected, actual, strict=True):
        assert compare_output(shown, stored) is None, code
    folds = [output.lexemes for output in outputs.values() if "folded" in output.lexemes]
    folded = [
        following["source"]
        for cell, following in itertools.pairwise(notebook["cells"])
        if cell["cell_type"] == "code"
        and following["cell_type"] == "markdown"
        and following["source"].startswith("<details>")
    ]
    assert len(folded) == len(folds)
    for lexemes, source in zip(folds, folded, strict=True):
        assert source.startswith(f"<details><summary>{lexemes['title']}</summary><pre>"), source
        inside = source.partition("<pre>")[2].removesuffix("</pre></details>")
        assert compare_output(lexemes["folded"], html.unescape(inside)) is None, source
    solutions = _solutions(lang, page)
    for exercise in page_exercises:
        mine = [
            cell for cell in cells if cell.get("metadata", {}).get("attention_docs", {}).get("exercise") == exercise.id
        ]
        roles = [_role(cell) for cell in mine]
        if exercise.kind == PREDICT:
            assert ["".join(cell["source"]) for cell in mine] == [code for code, _ in solutions[exercise.id]]
            assert all(not cell["outputs"] for cell in mine)  # the reader runs it once they have guessed
        elif exercise.kind == WRITE:
            assert roles == ["answer", "check"], exercise.id
            assert "..." in "".join(mine[0]["source"])  # to be written: no part of the solution
            # No language here: the setup cell set it, once for the notebook.
            assert "".join(mine[1]["source"]) == f'check("{exercise.id}", {exercise.answer})'
        else:
            assert roles == ["bug"], exercise.id


@pytest.mark.parametrize(("lang", "page"), NOTEBOOKS, ids=IDS)
def test_an_answer_cell_as_given_runs_and_the_check_says_what_is_missing(lang: str, page: str) -> None:
    """A reader who runs the notebook before writing anything gets a ✗ from each check, not an exception."""
    notebook = nbformat.read(make_notebooks.target(page, lang), as_version=4)
    for cell in notebook.cells:
        if _role(cell) != "answer":
            continue
        namespace = {"torch": torch, "nn": torch.nn}
        exec("".join(cell.source), namespace)
        exercise = cell.metadata["attention_docs"]["exercise"]
        answer = next(
            e.answer
            for e in exercises((ROOT / "docs" / lang / f"{page}.md").read_text(encoding="utf-8"))
            if e.id == exercise
        )
        result = diagnose(exercise, namespace[answer], lang)
        assert not result.passed, str(result)
        assert str(result).startswith(f"✗ {exercise}: ")


def _run(sources: list[str], cwd: Path, *, allow_errors: bool = False) -> list[str]:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    _execute(notebook, cwd, allow_errors=allow_errors)
    return [_printed(cell.outputs) for cell in notebook.cells]


def test_each_notebook_gets_a_kernel_of_its_own(tmp_path: Path) -> None:
    """What the forked kernels share is modules already imported, nothing a notebook defined or changed."""
    first = _run(["import os, torch\nx = 1\ntorch.manual_seed(7)\nprint(os.getcwd(), os.getpid())"], tmp_path)
    second = _run(
        [
            "import os\nprint(os.getcwd(), os.getpid())",
            "print('x' in globals())",
            "torch",
            "import torch\nprint(torch.initial_seed() == 7)",
        ],
        ROOT,
        allow_errors=True,
    )
    (first_cwd, first_pid), (second_cwd, second_pid) = first[0].split(), second[0].split()
    assert (first_cwd, second_cwd) == (str(tmp_path), str(ROOT))
    assert first_pid != second_pid
    assert second[1:] == ["False\n", "NameError: name 'torch' is not defined\n", "False\n"]


@pytest.mark.parametrize("threads", ["1", "3"])
def test_a_kernel_takes_its_torch_threads_from_its_own_environment(
    tmp_path: Path, threads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a kernel started afresh does, although torch was imported before the fork (docs_tools.kernels)."""
    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    assert _run(["import torch\nprint(torch.get_num_threads())"], tmp_path) == [f"{threads}\n"]


def test_a_failing_cell_fails_the_notebook(tmp_path: Path) -> None:
    import nbclient.exceptions

    with pytest.raises(nbclient.exceptions.CellExecutionError, match="ZeroDivisionError"):
        _run(["1 / 0"], tmp_path)


def _install_calls(source: str, pip=None) -> list[tuple[str, str]]:
    """The magics (such as ``%pip install``) that running the cell ``source`` calls, as IPython would run it;
    ``pip(line)``, if given, does what that magic would."""
    calls = []

    def magic(name: str, line: str) -> None:
        calls.append((name, line))
        if pip is not None:
            pip(line)

    exec(TransformerManager().transform_cell(source), {"get_ipython": lambda: SimpleNamespace(run_line_magic=magic)})
    return calls


@pytest.mark.parametrize("lang", make_notebooks.LANGUAGES)
def test_the_install_cell_does_nothing_where_both_packages_are_installed(
    lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It installs from PyPI exactly the versions the pages were checked with, of the library and of its
    exercises' checker, where another one or none is installed, and names the fallback: the same versions from
    the repository's release tags; where pip fails, it says so at once, with the way from a clone. A translated
    notebook then sets the checker's language."""
    versions = {"attention_lib": attention_lib.__version__, "attention_exercises": attention_exercises.__version__}
    notebook = json.loads(make_notebooks.target("masks", lang).read_text(encoding="utf-8"))
    install = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    source = "".join(install["source"])
    repository = "https://github.com/attention-docs/attention-docs"
    assert f'# %pip install "attention_lib @ git+{repository}@attention_lib-v{versions["attention_lib"]}"\n' in source
    assert (
        f'# %pip install "attention_exercises @ git+{repository}@attention_exercises-v'
        f'{versions["attention_exercises"]}#subdirectory=exercises"\n'
    ) in source
    assert {name: importlib.metadata.version(name) for name in versions} == versions
    language = [line for line in source.splitlines() if line.startswith("set_language(")]
    assert language == (
        [] if lang == "en" else [f'set_language("{lang}")  # ' + make_notebooks._words(lang)["language"]]
    )
    # Run as IPython would, with set_language standing in for the checker's (it would last for the process).
    chosen: list[str] = []
    monkeypatch.setattr(attention_exercises, "set_language", chosen.append)
    assert _install_calls(source) == []
    assert chosen == ([] if lang == "en" else [lang])
    pip = [("pip", "install --quiet " + " ".join(f"{name}=={version}" for name, version in versions.items()))]
    for missing in versions:
        for other in ("0.0.1", None):
            done: list[str] = []  # what pip installed

            def installed(name: str, missing: str = missing, other: str | None = other, done=done) -> str:
                assert name in versions
                if name != missing or done:
                    return versions[name]
                if other is None:
                    raise importlib.metadata.PackageNotFoundError(name)
                return other

            monkeypatch.setattr(importlib.metadata, "version", installed)
            assert _install_calls(source, pip=done.append) == pip, (missing, other)
            # Where pip cannot install it (before the first release, or offline), the cell stops at once and
            # says what failed and what to do, in the notebook's language; not a ModuleNotFoundError later.
            done.clear()
            with pytest.raises(RuntimeError) as failed:
                _install_calls(source, pip=lambda line: None)
            said = str(failed.value)
            assert missing in said
            assert f"!git clone --depth 1 {repository}" in said
            assert "%pip install ./attention-docs ./attention-docs/exercises" in said
            assert ("从 PyPI 安装" in said) == (lang == "zh")


def test_a_block_shown_but_not_run_stays_in_the_prose_and_no_cell_runs_it() -> None:
    """A block the page shows without running (``<!-- skip: next "why" -->``, not library source: the real-model
    page's download of GPT-2 from the Hub) is a fenced block in a Markdown cell, never a code cell, which the
    suite's kernel and a reader's Run all would execute."""
    notebook = json.loads(make_notebooks.target("real-model", "en").read_text(encoding="utf-8"))
    where = {
        cell["cell_type"]
        for cell in notebook["cells"]
        if 'GPT2LMHeadModel.from_pretrained("gpt2"' in "".join(cell["source"])
    }
    assert where == {"markdown"}
    markdown = next("".join(cell["source"]) for cell in notebook["cells"] if "AutoTokenizer" in "".join(cell["source"]))
    assert "```python\nfrom transformers import AutoTokenizer\n" in markdown
    assert "skip:" not in markdown


def test_a_page_that_imports_transformers_installs_the_major_version_it_was_checked_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """transformers, which Colab has and the real-model page imports, is installed where another major version or
    none is, at the range the test suite runs the page with; a page that does not import it gets no such line."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert make_notebooks.EXTRAS["transformers"] in pyproject["project"]["optional-dependencies"]["test"]
    assert make_notebooks.extras(["import torch\nfrom transformers import GPT2Config\n"]) == ["transformers"]
    assert make_notebooks.extras(["import torch  # transformers"]) == []
    for page in make_notebooks.CHAPTERS:
        path = make_notebooks.target(page, "en")
        if not path.exists():
            continue
        notebook = json.loads(path.read_text(encoding="utf-8"))
        install = "".join(next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")["source"])
        assert ("transformers" in install) == (page == "real-model"), page
    notebook = json.loads(make_notebooks.target("real-model", "en").read_text(encoding="utf-8"))
    source = "".join(next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")["source"])
    assert importlib.metadata.version("transformers").split(".")[0] == "5"
    versions = {"attention_lib": attention_lib.__version__, "attention_exercises": attention_exercises.__version__}
    pip = 'install --quiet "transformers>=5,<6"'
    for installed, expected in (("5.24.0", []), ("5.0.0rc1", []), ("4.57.1", [pip]), ("6.0.0", [pip]), (None, [pip])):
        now = {**versions, "transformers": installed}

        def version(name: str, now: dict[str, str | None] = now) -> str:
            if now[name] is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return str(now[name])

        monkeypatch.setattr(importlib.metadata, "version", version)
        assert [line for _, line in _install_calls(source)] == expected, installed
    with pytest.raises(ValueError, match="one major version"):
        make_notebooks._major("transformers>=5")


def test_in_a_notebook_the_check_folds_its_hint_and_is_shown_once(tmp_path: Path) -> None:
    """A reader who runs a check in Jupyter sees the ✗ and the example, and opens the hint when stuck; the result
    that check returns, the cell's last expression, is not shown a second time."""
    wrong = (
        "import torch\nfrom attention_exercises import check\n\n"
        "def causal_weights(attn_scores):\n    return torch.softmax(attn_scores, dim=-1)\n\n"
        'check("exercise-causal-weights", causal_weights)'
    )
    right = (
        "def causal_weights(attn_scores):\n    n = attn_scores.shape[-1]\n"
        "    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)\n"
        "    return torch.softmax(attn_scores.masked_fill(future, -torch.inf), dim=-1)\n\n"
        'result = check("exercise-causal-weights", causal_weights)\nassert result\nresult'
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (wrong, right)])
    _execute(notebook, tmp_path)
    failed, passed = notebook.cells
    [shown] = failed.outputs
    assert shown["output_type"] == "display_data"
    text, page = shown["data"]["text/plain"], shown["data"]["text/html"]
    namespace: dict = {}
    exec(wrong.rpartition("\n")[0], namespace)  # the same answer, here
    assert text == str(diagnose("exercise-causal-weights", namespace["causal_weights"]))
    before, _, folded = page.partition("<details><summary>Hint</summary>")
    assert "Compared with: masked_softmax(attn_scores, causal_mask(n))" in before
    assert "Hint" not in before  # in view: the ✗, the reference and the example; the hint is folded
    assert "nothing is masked" in folded
    assert folded.endswith("</pre></details>")
    [shown] = passed.outputs
    assert shown["output_type"] == "display_data"
    assert shown["data"]["text/plain"].startswith("✓ exercise-causal-weights\n")
    assert "<details>" not in shown["data"]["text/html"]
