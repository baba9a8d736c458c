"""The layering, one way only: the library imports nothing of the project; the site's tooling (docs_tools/) may
import the library; the hooks, dev.py and the tests may import both; nothing imports the tests.

Written as a test over each file's import statements (``ast``) rather than an import-linter contract:
``tests/`` is not a package, so a contract cannot name it, and the rule for the library (the standard
library and torch only) is about every import, not one package's.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Top-level folders that hold no code of the project (environments, build output, caches).
SKIPPED = {".venv", ".git", "node_modules", "site", "dist", "build", ".cache", ".hypothesis", ".pytest_cache"}
#: The project's own top-level modules and packages, by the name they are imported as.
PROJECT = {"attention_lib", "attention_exercises", "docs_tools", "hooks", "tests", "benchmarks", "dev", "conftest"}
#: Modules that live in tests/: the test files and their fixtures.
TEST_MODULES = {path.stem for path in (ROOT / "tests").rglob("*.py")} | {"tests", "conftest"}
#: What the library may import besides the standard library: torch and itself.
LIBRARY_MAY_IMPORT = {"torch", "attention_lib"}
#: What the exercises' checker may import: the library it compares with, and tomli for its messages on Python 3.10.
CHECKER_MAY_IMPORT = {"torch", "attention_lib", "attention_exercises", "tomli"}


def python_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] not in SKIPPED and path.parts[-2] != "__pycache__"
    )


def imported(source: str) -> set[str]:
    """The top-level names of the modules a file imports (``docs_tools`` for ``from docs_tools.pages import x``),
    relative imports as ``.``."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else node.module.split(".")[0])
    return names


def problems(relative: str, names: set[str]) -> list[str]:
    """What breaks the layering when the file at ``relative`` (``docs_tools/pages.py``) imports ``names``."""
    layer = relative.partition("/")[0] if "/" in relative else relative.removesuffix(".py")
    found = [f"{relative}: imports the tests' {name}" for name in sorted(names & TEST_MODULES)]
    if layer == "attention_lib":
        outside = {name for name in names - LIBRARY_MAY_IMPORT - {"."} if name not in sys.stdlib_module_names}
        found += [f"{relative}: the library imports {name}" for name in sorted(outside - TEST_MODULES)]
    elif layer == "exercises":
        outside = {name for name in names - CHECKER_MAY_IMPORT - {"."} if name not in sys.stdlib_module_names}
        found += [f"{relative}: the checker imports {name}" for name in sorted(outside - TEST_MODULES)]
    elif layer == "docs_tools":
        # The checker is a package of its own, above the tooling: the tooling reads its messages as files.
        above = PROJECT - TEST_MODULES - {"attention_lib", "docs_tools"}
        found += [f"{relative}: the tooling imports {name}" for name in sorted(names & above)]
    return found


def test_every_import_follows_the_layering() -> None:
    files = python_files()
    assert {
        "attention_lib/__init__.py",
        "exercises/attention_exercises/_core.py",
        "docs_tools/pages.py",
        "hooks/search.py",
        "conftest.py",
        "dev.py",
    } <= {path.relative_to(ROOT).as_posix() for path in files}
    found = []
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        found += problems(relative, imported(path.read_text(encoding="utf-8")))
    assert found == []


CHECKER_FILE = "exercises/attention_exercises/x.py"


@pytest.mark.parametrize(
    ("relative", "source", "expected"),
    [
        ("attention_lib/x.py", "import torch\nimport math\nfrom . import masks\n", []),
        ("attention_lib/x.py", "import numpy", ["attention_lib/x.py: the library imports numpy"]),
        ("attention_lib/x.py", "from docs_tools import pages", ["attention_lib/x.py: the library imports docs_tools"]),
        ("attention_lib/x.py", "import attention_exercises",
         ["attention_lib/x.py: the library imports attention_exercises"]),
        (CHECKER_FILE, "import torch\nimport tomli\nfrom attention_lib import masks\nfrom . import _core\n", []),
        (CHECKER_FILE, "import numpy", [f"{CHECKER_FILE}: the checker imports numpy"]),
        (CHECKER_FILE, "import docs_tools", [f"{CHECKER_FILE}: the checker imports docs_tools"]),
        ("docs_tools/x.py", "import attention_exercises", ["docs_tools/x.py: the tooling imports attention_exercises"]),
        ("docs_tools/x.py", "import attention_lib\nfrom sybil import Document\n", []),
        ("docs_tools/x.py", "from tests import conftest", ["docs_tools/x.py: imports the tests' tests"]),
        ("docs_tools/x.py", "from hooks import search", ["docs_tools/x.py: the tooling imports hooks"]),
        ("docs_tools/x.py", "import dev", ["docs_tools/x.py: the tooling imports dev"]),
        ("docs_tools/x.py", "import test_docs", ["docs_tools/x.py: imports the tests' test_docs"]),
        ("hooks/x.py", "from docs_tools import translations\nimport attention_lib\n", []),
        ("hooks/x.py", "from conftest import DEVICES", ["hooks/x.py: imports the tests' conftest"]),
        ("tests/test_x.py", "from conftest import DEVICES", ["tests/test_x.py: imports the tests' conftest"]),
        ("tests/test_x.py", "from test_docs import escapes", ["tests/test_x.py: imports the tests' test_docs"]),
        ("tests/test_x.py", "from docs_tools import pages\nimport attention_lib\n", []),
        ("dev.py", "import tests.conftest", ["dev.py: imports the tests' tests"]),
    ],
)  # fmt: skip
def test_the_layering_check_can_fail(relative: str, source: str, expected: list[str]) -> None:
    assert problems(relative, imported(source)) == expected


GUIDES = {"en": (ROOT / "CONTRIBUTING.md", "## Architecture"), "zh": (ROOT / "CONTRIBUTING.zh-CN.md", "## 项目结构")}


def _tracked_top_level() -> set[str]:
    """The repository's top-level directories (``docs/``) and Python files, as Git tracks them."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    names = {path.split("/", 1)[0] + "/" for path in files.splitlines() if "/" in path}
    return names | {path for path in files.splitlines() if "/" not in path and path.endswith(".py")}


@pytest.mark.parametrize("lang", GUIDES)
def test_the_guide_says_where_every_directory_tooling_module_and_hook_lives(lang: str) -> None:
    """CONTRIBUTING's "Where things live" and hook tables match the tree: a new top-level directory, tooling
    module or package (``docs_tools/figures/``) or hook needs a line there, and a line for something gone fails
    too."""
    guide, heading = GUIDES[lang]
    section = guide.read_text(encoding="utf-8").split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))
    modules = {f"docs_tools/{path.name}" for path in (ROOT / "docs_tools").glob("*.py") if path.name != "__init__.py"}
    packages = {f"docs_tools/{path.parent.name}/" for path in (ROOT / "docs_tools").glob("*/__init__.py")}
    hooks = {f"hooks/{path.name}" for path in (ROOT / "hooks").glob("*.py")}
    expected = _tracked_top_level() | modules | packages | hooks
    assert sorted(expected - listed) == [], f"{guide.name}: add a line for each"
    assert sorted(path for path in listed if not (ROOT / path).exists()) == [], f"{guide.name}: lines for nothing"


def _collect(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
    )


def test_only_the_site_layer_may_use_the_built_site(tmp_path: Path) -> None:
    """So that the layers without the site (``python3 dev.py test --fast``) never wait for a build: a test in
    another layer that asks for ``site`` stops the run at collection and is named; the browser's fixtures are
    the site layer's own (tests/site/conftest.py), so no other layer even finds them."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for layer in ("pages", "site"):
        (tmp_path / "tests" / layer).mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests")
    shutil.copy(ROOT / "tests" / "site" / "conftest.py", tmp_path / "tests" / "site")
    uses_the_site = "def test_reads_a_page(site):\n    pass\n"
    (tmp_path / "tests" / "site" / "test_here.py").write_text(uses_the_site, encoding="utf-8")
    assert _collect(tmp_path, "tests/site").returncode == 0

    (tmp_path / "tests" / "pages" / "test_there.py").write_text(uses_the_site, encoding="utf-8")
    result = _collect(tmp_path, "tests")
    assert result.returncode != 0
    assert "tests/pages/test_there.py::test_reads_a_page uses the built site: it belongs in tests/site" in (
        result.stdout + result.stderr
    )

    (tmp_path / "tests" / "pages" / "test_there.py").write_text("def test_clicks(page):\n    pass\n", "utf-8")
    fixtures = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/pages"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "fixture 'page' not found" in fixtures.stdout
