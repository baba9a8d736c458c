"""The two packages as PyPI shows them (attention_lib, and attention_exercises, its exercises' checker): their
descriptions, their versions, and the tests ``python3 dev.py package`` runs against the built wheels. (That
command builds, checks and installs the wheels; this file checks, in seconds, what it relies on.)"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import io
import sys
import tarfile
import zipfile
from pathlib import Path

import attention_exercises
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
EXERCISES_PROJECT = tomllib.loads((ROOT / "exercises" / "pyproject.toml").read_text(encoding="utf-8"))
EXERCISES_DESCRIPTION = ROOT / "exercises" / EXERCISES_PROJECT["project"]["readme"]

#: What a test file run against the installed wheels may import besides the standard library.
WHEEL_TEST_IMPORTS = {"attention_lib", "attention_exercises", "torch", "hypothesis", "numpy", "pytest", "conftest"}


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


def test_the_wheels_are_tested_with_every_test_file_of_the_packages_alone() -> None:
    """A test file that needs only the packages (and conftest.py, which dev.py package loads with them) is run
    against the installed wheels: the checker's in tests/exercises/, the library's in tests/lib/. One that needs
    anything else (the pages, the site, docs_tools/) cannot be."""
    # Its browser fixtures import playwright, but no package test asks for them.
    assert _imports(ROOT / "tests" / "conftest.py", when_loaded=True) <= WHEEL_TEST_IMPORTS - {"conftest"}
    packages_alone = [
        path
        for path in (ROOT / "tests").rglob("test_*.py")
        if _imports(path) & {"attention_lib", "attention_exercises"} and _imports(path) <= WHEEL_TEST_IMPORTS
    ]
    assert [dist.tests for dist in dev.DISTRIBUTIONS] == [ROOT / "tests" / "lib", ROOT / "tests" / "exercises"]
    checker = sorted(path for path in packages_alone if "attention_exercises" in _imports(path))
    library = sorted(path for path in packages_alone if "attention_exercises" not in _imports(path))
    assert checker == sorted((ROOT / "tests" / "exercises").glob("test_*.py"))
    assert library == sorted((ROOT / "tests" / "lib").glob("test_*.py"))


def test_the_library_knows_nothing_of_its_checker() -> None:
    """attention_lib is the reference implementation only: the checker depends on it, never the other way."""
    for path in (ROOT / "attention_lib").rglob("*.py"):
        assert "attention_exercises" not in _imports(path), path
    assert not (ROOT / "attention_lib" / "exercises").exists()


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


@pytest.mark.parametrize(
    ("project", "name"), [(PYPROJECT, "attention_lib"), (EXERCISES_PROJECT, "attention_exercises")]
)
def test_each_version_is_written_once(project: dict, name: str) -> None:
    assert project["project"]["name"] == name
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": f"{name}.__version__"}


def test_the_checker_requires_the_library_it_was_tested_with() -> None:
    """The checker's pinned range of attention_lib holds the library beside it (and no earlier release, which
    had a checker of its own)."""
    from packaging.requirements import Requirement

    (library,) = [
        Requirement(text)
        for text in EXERCISES_PROJECT["project"]["dependencies"]
        if Requirement(text).name == "attention_lib"
    ]
    assert library.specifier.contains(attention_lib.__version__), library
    assert not library.specifier.contains("0.3.0"), library
    assert library.specifier.contains(attention_lib.__version__.rsplit(".", 1)[0] + ".99")
    major, minor, _ = attention_lib.__version__.split(".")
    assert not library.specifier.contains(f"{major}.{int(minor) + 1}.0"), "an upper bound below the next minor"


def test_each_data_file_is_package_data() -> None:
    """What dev.py package expects besides the modules is what setuptools puts in the wheel."""
    for project, dist in ((PYPROJECT, dev.LIBRARY), (EXERCISES_PROJECT, dev.EXERCISES)):
        assert project["tool"]["setuptools"]["package-data"] == {dist.name: list(dist.data)}
        assert all(list(dist.package.glob(pattern)) for pattern in dist.data), dist.data


@pytest.mark.parametrize("package", [attention_lib, attention_exercises], ids=lambda package: package.__name__)
def test_the_installed_metadata_has_the_sources_version(package) -> None:
    """An editable install keeps the version it was installed with; after a bump of __version__ the notebooks'
    install cell and the site's footer would name the old one."""
    installed = importlib.metadata.version(package.__name__)
    assert installed == package.__version__, "reinstall: python3 dev.py test (it reinstalls when a version changes)"


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


def test_the_checkers_pypi_description_is_about_the_checker() -> None:
    text = EXERCISES_DESCRIPTION.read_text(encoding="utf-8")
    config = site_config.config()
    site = config["site_url"]
    assert text.startswith("# attention_exercises\n")
    assert "pip install attention_exercises\n" in text
    assert f"]({site})" in text
    assert f"]({site}zh/)" in text
    assert f"]({config['extra']['repository']})" in text
    urls = EXERCISES_PROJECT["project"]["urls"]
    assert urls == PYPROJECT["project"]["urls"]
    # Its own copy of the license, as the sdist needs it beside its pyproject.toml: the same text.
    assert EXERCISES_PROJECT["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "exercises" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


@pytest.mark.parametrize(("description", "count"), [(DESCRIPTION, 1), (EXERCISES_DESCRIPTION, 1)])
def test_the_pypi_descriptions_examples_print_what_they_show(description: Path, count: int) -> None:
    """Each example runs, in order, as a reader pastes them into one session, and prints its output block."""
    document = Document(description.read_text(encoding="utf-8"), str(description))
    blocks = list(fenced_blocks(document))
    outputs = shown_outputs(document, blocks)
    examples = [block for block in blocks if block.lexemes["info"] == RUN]
    assert len(examples) == count
    namespace: dict[str, object] = {}
    for example in examples:
        assert example.start in outputs, "the example's output block"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(str(example.lexemes["source"]), str(description), "exec"), namespace)
        problem = compare_output(str(outputs[example.start].lexemes["source"]), printed.getvalue())
        assert problem is None, problem


def _archives(tmp_path: Path, dist: dev.Distribution, wheel_files: list[str]) -> tuple[Path, Path]:
    """An sdist of ``dist``'s sources and a wheel holding ``wheel_files``, as dev.py package lists them."""
    sources = ["pyproject.toml", "LICENSE", "PKG-INFO", dist.description, *dist.files()]
    sdist = tmp_path / f"{dist.name}-9.9.9.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name in sources:
            archive.addfile(tarfile.TarInfo(f"{dist.name}-9.9.9/{name}"))
    wheel = tmp_path / f"{dist.name}-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in [*wheel_files, f"{dist.name}-9.9.9.dist-info/METADATA"]:
            archive.writestr(name, "")
    return sdist, wheel


@pytest.mark.parametrize(
    ("dist", "change", "problem"),
    [
        (dev.LIBRARY, None, None),
        (dev.EXERCISES, None, None),
        (dev.LIBRARY, "-attention_lib/masks.py", "the wheel lacks attention_lib/masks.py"),
        (dev.LIBRARY, "-attention_lib/py.typed", "the wheel lacks attention_lib/py.typed"),
        (dev.EXERCISES, "-attention_exercises/_core.py", "the wheel lacks attention_exercises/_core.py"),
        (dev.LIBRARY, "+tests/lib/test_masks.py", "the wheel holds tests/lib/test_masks.py"),
        # Neither wheel holds the other's package.
        (dev.LIBRARY, "+attention_exercises/_core.py", "the wheel holds attention_exercises/_core.py"),
        (dev.EXERCISES, "+attention_lib/masks.py", "the wheel holds attention_lib/masks.py"),
    ],
    ids=lambda value: value.name if isinstance(value, dev.Distribution) else str(value),
)
def test_the_archive_check_can_fail(
    tmp_path: Path, dist: dev.Distribution, change: str | None, problem: str | None
) -> None:
    """dev.py package stops when a wheel lacks a file of its package or holds anything else."""
    files = dist.files()
    if change and change[0] == "-":
        files.remove(change[1:])
    elif change:
        files.append(change[1:])
    sdist, wheel = _archives(tmp_path, dist, files)
    if problem is None:
        dev.check_archives(dist, sdist, wheel)
    else:
        with pytest.raises(SystemExit, match=problem):
            dev.check_archives(dist, sdist, wheel)


def test_the_notebooks_install_the_packages_dev_py_builds() -> None:
    """docs_tools/notebooks.py, which may not import dev.py, names each package's project folder for the install
    cell's fallback (a tag's subdirectory): the same folders."""
    from docs_tools import notebooks

    folders = {dist.name: (dist.project.relative_to(ROOT).as_posix() or ".") for dist in dev.DISTRIBUTIONS}
    assert folders == notebooks.PACKAGES
