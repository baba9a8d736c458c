"""``python3 dev.py mutation``: what it reads of a real mutmut run, how it tells a new survivor from a listed
equivalent, and the list of equivalents itself, which must name code that still exists (the weekly workflow,
.github/workflows/mutation.yml, runs the whole library; this file checks in seconds what that run relies on)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dev

ROOT = Path(__file__).resolve().parents[2]

#: A package small enough for mutmut to mutate in seconds, and its tests: they pin clamp's lower bound and
#: Box.area, and leave clamp's upper bound open. mutmut makes five mutants of it: two that the tests kill, one
#: they miss (high=11), and two that no test can kill (at x == low, returning low is returning x).
TINY = {
    "tiny/__init__.py": "",
    "tiny/ops.py": """\
        def clamp(x, low=0, high=10):
            if x < low:
                return low
            if x > high:
                return high
            return x


        class Box:
            def area(self, width, height):
                return width * height
        """,
    "tests/test_ops.py": """\
        from tiny.ops import Box, clamp


        def test_clamp_lifts_what_is_too_low():
            assert clamp(-1) == 0
            assert clamp(0) == 0
            assert clamp(5) == 5


        def test_area():
            assert Box().area(2, 3) == 6
        """,
    "pyproject.toml": """\
        [tool.mutmut]
        source_paths = ["tiny"]
        pytest_add_cli_args_test_selection = ["tests"]
        pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist"]
        """,
}


@pytest.fixture(scope="module")
def tiny_mutants(tmp_path_factory: pytest.TempPathFactory) -> list[dev.Mutant]:
    """The mutants of ``tiny`` after a real ``mutmut run``, as dev.py reads them."""
    project = tmp_path_factory.mktemp("tiny")
    for name, text in TINY.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text), encoding="utf-8")
    mutmut = Path(sys.executable).parent / "mutmut"
    env = {**os.environ, **dev.MUTATION_THREADS}
    env.pop("PYTEST_XDIST_WORKER", None)
    result = subprocess.run(
        [mutmut, "run", "--max-children", "1"], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return dev.mutants_of(project / "mutants", "tiny")


def test_the_report_reads_each_mutants_outcome_and_change(tiny_mutants: list[dev.Mutant]) -> None:
    assert {(m.name, m.outcome, m.change) for m in tiny_mutants} == {
        ("tiny.ops.x_clamp__mutmut_1", "killed", "- def clamp(x, low=0, high=10):\n+ def clamp(x, low=1, high=10):"),
        ("tiny.ops.x_clamp__mutmut_2", "survived", "- def clamp(x, low=0, high=10):\n+ def clamp(x, low=0, high=11):"),
        ("tiny.ops.x_clamp__mutmut_3", "survived", "- if x < low:\n+ if x <= low:"),
        ("tiny.ops.x_clamp__mutmut_4", "survived", "- if x > high:\n+ if x >= high:"),
        ("tiny.ops.xǁBoxǁarea__mutmut_1", "killed", "- return width * height\n+ return width / height"),
    }
    (area,) = [m for m in tiny_mutants if m.outcome == "killed" and "width" in m.change]
    assert (area.function, area.module) == ("tiny.ops.xǁBoxǁarea", "tiny.ops")


#: The two mutants no test of ``tiny`` can kill, as equivalent_mutants.toml would list them.
TINY_EQUIVALENTS = [
    dev.Equivalent("tiny.ops.x_clamp", "- if x < low:\n+ if x <= low:", "at x == low, returning low is returning x"),
    dev.Equivalent(
        "tiny.ops.x_clamp", "- if x > high:\n+ if x >= high:", "at x == high, returning high is returning x"
    ),
]


def test_a_listed_equivalent_is_not_reported_and_a_new_survivor_is(tiny_mutants: list[dev.Mutant]) -> None:
    report = dev.MutationReport.of(tiny_mutants, TINY_EQUIVALENTS, cuda=False)
    assert [m.name for m in report.survivors] == ["tiny.ops.x_clamp__mutmut_2"]
    assert report.stale == []
    assert dict(report.rows["tiny.ops"]) == {"mutants": 5, "killed": 2, "equivalent": 2, "not killed": 1}
    assert report.table().splitlines()[-1].split() == ["total", "5", "2", "0", "2", "0", "1"]


def test_an_entry_that_matches_no_survivor_is_stale(tiny_mutants: list[dev.Mutant]) -> None:
    killed = dev.Equivalent(
        "tiny.ops.x_clamp", "- def clamp(x, low=0, high=10):\n+ def clamp(x, low=1, high=10):", "a test kills it"
    )
    elsewhere = dev.Equivalent("tiny.ops.xǁBoxǁarea", "- if x > high:\n+ if x >= high:", "not this function's")
    report = dev.MutationReport.of(tiny_mutants, [*TINY_EQUIVALENTS, killed, elsewhere], cuda=False)
    assert report.stale == [killed, elsewhere]


def test_a_mutant_only_cuda_can_kill_must_die_where_cuda_is_present(tiny_mutants: list[dev.Mutant]) -> None:
    upper = dev.Equivalent(
        "tiny.ops.x_clamp", "- def clamp(x, low=0, high=10):\n+ def clamp(x, low=0, high=11):", "GPU", cuda=True
    )
    without = dev.MutationReport.of(tiny_mutants, [*TINY_EQUIVALENTS, upper], cuda=False)
    assert (without.survivors, without.rows["tiny.ops"]["needs CUDA"]) == ([], 1)
    with_cuda = dev.MutationReport.of(tiny_mutants, [*TINY_EQUIVALENTS, upper], cuda=True)
    assert [m.name for m in with_cuda.survivors] == ["tiny.ops.x_clamp__mutmut_2"]
    assert with_cuda.stale == []


def test_modules_are_named_as_the_command_line_gives_them() -> None:
    assert dev.mutation_selection([]) == []
    assert dev.mutation_selection(["heads", "attention_lib.masks"]) == [
        "attention_lib.heads.*",
        "attention_lib.masks.*",
    ]
    assert dev.mutation_selection(["heads", "attention_lib"]) == []
    for wrong in ("head", "attention_exercises"):
        with pytest.raises(SystemExit) as exit_:
            dev.mutation_selection([wrong])
        assert str(exit_.value).startswith(
            f"dev.py mutation: no module attention_lib.{wrong}; attention_lib's are: _checks,"
        )


def _function_source(entry: dev.Equivalent) -> str:
    """The source of the library function an entry names (``attention_lib.heads.x_split_heads``,
    ``attention_lib.causal.xǁCausalAttentionǁforward``)."""
    module, _, mangled = entry.function.rpartition(".")
    path = ROOT / (module.replace(".", "/") + ".py")
    owner, name = dev.unmangle(mangled)
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and owner == node.name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return ast.get_source_segment(source, item) or ""
        if owner is None and isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(source, node) or ""
    raise AssertionError(f"{entry.function}: no such function in {path.relative_to(ROOT)}")


EQUIVALENTS = dev.read_equivalents(dev.LIBRARY.tests / dev.EQUIVALENTS)


@pytest.mark.parametrize("entry", EQUIVALENTS, ids=lambda entry: entry.function.rpartition(".")[2])
def test_every_listed_equivalent_is_still_in_the_code(entry: dev.Equivalent) -> None:
    """The weekly run reports an entry whose mutant is gone; this finds the commonest cause at once: the line
    it mutates changed."""
    lines = {line.strip() for line in _function_source(entry).splitlines()}
    removed = [line[2:] for line in entry.change.splitlines() if line.startswith("- ")]
    assert removed, f"{entry.function}: the change removes no line"
    assert all(line in lines for line in removed), f"{entry.function} no longer has {removed}"
    assert all(line[:2] in ("- ", "+ ") for line in entry.change.splitlines())
    assert "\n" not in entry.reason, entry.reason
    assert len(entry.reason) >= 20, entry.reason


def test_the_library_has_a_list_of_equivalents_and_it_lists_each_mutant_once() -> None:
    assert EQUIVALENTS
    keys = [(entry.function, entry.change) for entry in EQUIVALENTS]
    assert len(keys) == len(set(keys))
