"""The package as PyPI shows it: its description, its version, and the tests ``python3 dev.py package`` runs
against the built wheel. (That command builds, checks and installs the wheel; this file checks, in seconds,
what it relies on.)"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from sybil import Document

import attention_lib
import dev
from docs_tools import config as site_config
from docs_tools.outputs import compare_output
from docs_tools.pages import RUN, fenced_blocks, shown_outputs

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10; pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DESCRIPTION = ROOT / PYPROJECT["project"]["readme"]

#: What a test file run against the installed wheel may import besides the standard library.
WHEEL_TEST_IMPORTS = {"attention_lib", "torch", "hypothesis", "numpy", "pytest", "conftest"}


def _imports(path: Path, *, when_loaded: bool = False) -> set[str]:
    """The top-level modules ``path`` imports, the standard library left out: anywhere in it, or only those
    its loading imports (``when_loaded``; a fixture's imports wait until a test asks for the fixture)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in tree.body if when_loaded else ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
            modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names)


def test_the_wheel_is_tested_with_every_test_file_of_the_library_alone() -> None:
    """A test file that needs only the library (and conftest.py, which dev.py package loads with it) is run
    against the installed wheel; one that needs anything else (the pages, the site, docs_tools/) cannot be."""
    # Its browser fixtures import playwright, but no library test asks for them.
    assert _imports(ROOT / "tests" / "conftest.py", when_loaded=True) <= WHEEL_TEST_IMPORTS - {"conftest"}
    library_alone = sorted(
        path
        for path in (ROOT / "tests").rglob("test_*.py")
        if "attention_lib" in _imports(path) and _imports(path) <= WHEEL_TEST_IMPORTS
    )
    assert dev.LIBRARY_TESTS == ROOT / "tests" / "lib"
    assert library_alone == sorted((ROOT / "tests" / "lib").glob("test_*.py"))


#: pytest's own fixtures: all that an autouse fixture of conftest.py may ask for, since it runs for the
#: library's tests beside the installed wheel too, where no plugin (pytest-xdist's worker_id) is installed.
PYTEST_FIXTURES = {"request", "pytestconfig", "tmp_path_factory", "tmp_path", "monkeypatch"}


def test_conftests_autouse_fixtures_need_only_pytest() -> None:
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    autouse = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(decorator, ast.Call) and any(k.arg == "autouse" for k in decorator.keywords)
            for decorator in node.decorator_list
        )
    ]
    assert autouse, "the check found no autouse fixture in tests/conftest.py"
    for fixture in autouse:
        asked = {argument.arg for argument in fixture.args.args}
        assert asked <= PYTEST_FIXTURES, f"{fixture.name} asks for {sorted(asked - PYTEST_FIXTURES)}"


def test_the_version_is_written_once() -> None:
    assert "version" not in PYPROJECT["project"]
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "attention_lib.__version__"}


def test_the_installed_metadata_has_the_sources_version() -> None:
    """An editable install keeps the version it was installed with; after a bump of __version__ the notebooks'
    install cell and the site's footer would name the old one."""
    installed = importlib.metadata.version("attention_lib")
    assert installed == attention_lib.__version__, "reinstall: .venv/bin/python -m pip install --no-deps -e ."


def test_the_pypi_description_is_about_the_package() -> None:
    text = DESCRIPTION.read_text(encoding="utf-8")
    config = site_config.config()
    site = config["site_url"]
    assert DESCRIPTION == ROOT / "attention_lib" / "README.md"
    assert text.startswith("# attention_lib\n")
    assert "pip install attention_lib\n" in text
    assert f"]({site})" in text
    assert f"]({site}zh/)" in text
    assert f"]({config['extra']['repository']})" in text
    assert 'True means "masked out"' in text
    # The same addresses on PyPI's sidebar.
    urls = PYPROJECT["project"]["urls"]
    assert urls["Documentation"] == site
    assert urls["Source"] == config["extra"]["repository"]
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


def test_the_pypi_descriptions_examples_print_what_they_show() -> None:
    """Each example runs, in order, as a reader pastes them into one session, and prints its output block."""
    document = Document(DESCRIPTION.read_text(encoding="utf-8"), str(DESCRIPTION))
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    examples = [block for block in blocks if block.lexemes["info"] == RUN]
    assert len(examples) == 2, "the package's example and the exercise checker's"
    namespace: dict[str, object] = {}
    for example in examples:
        assert example.start in outputs, "the example's output block"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(str(example.lexemes["source"]), str(DESCRIPTION), "exec"), namespace)
        problem = compare_output(str(outputs[example.start].lexemes["source"]), printed.getvalue())
        assert problem is None, problem


def _archives(tmp_path: Path, wheel_modules: list[str]) -> tuple[Path, Path]:
    """An sdist of the package's sources and a wheel holding ``wheel_modules``, as dev.py package lists them."""
    sources = ["pyproject.toml", "LICENSE", "PKG-INFO", "attention_lib/README.md", "attention_lib/py.typed"]
    sources += [path.relative_to(ROOT).as_posix() for path in (ROOT / "attention_lib").rglob("*.py")]
    sdist = tmp_path / "attention_lib-9.9.9.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name in sources:
            archive.addfile(tarfile.TarInfo(f"attention_lib-9.9.9/{name}"))
    wheel = tmp_path / "attention_lib-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in [*wheel_modules, "attention_lib/py.typed", "attention_lib-9.9.9.dist-info/METADATA"]:
            archive.writestr(name, "")
    return sdist, wheel


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (None, None),
        ("-attention_lib/masks.py", "the wheel lacks attention_lib/masks.py"),
        # A module of a subpackage counts as much as one at the top.
        ("-attention_lib/exercises/_core.py", "the wheel lacks attention_lib/exercises/_core.py"),
        ("+tests/lib/test_masks.py", "the wheel holds tests/lib/test_masks.py"),
    ],
)
def test_the_archive_check_can_fail(tmp_path: Path, change: str | None, problem: str | None) -> None:
    """dev.py package stops when the wheel lacks a module of the package or holds anything else."""
    modules = [path.relative_to(ROOT).as_posix() for path in (ROOT / "attention_lib").rglob("*.py")]
    if change and change[0] == "-":
        modules.remove(change[1:])
    elif change:
        modules.append(change[1:])
    sdist, wheel = _archives(tmp_path, modules)
    if problem is None:
        dev.check_archives(sdist, wheel)
    else:
        with pytest.raises(SystemExit, match=problem):
            dev.check_archives(sdist, wheel)
