"""The GitHub workflows: zizmor finds nothing, and they and the Dependabot config match GitHub's schemas."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

import dev as dev_module

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10; pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _run(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([str(arg) for arg in args], capture_output=True, text=True, cwd=ROOT, env=env)


def _zizmor(path: Path) -> subprocess.CompletedProcess[str]:
    # --offline: no GitHub API (it cannot be reached from CI either); the auditor persona also reports
    # the findings zizmor's default persona would suppress.
    return _run(BIN / "zizmor", "--offline", "--persona", "auditor", "--no-progress", path)


def test_zizmor_finds_nothing_in_the_workflows() -> None:
    result = _zizmor(GITHUB / "workflows")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout + result.stderr


def test_zizmor_catches_the_mistakes_it_is_here_for(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "bad.yml").write_text(
        """\
name: bad
on: pull_request_target
jobs:
  greet:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.pull_request.title }}"
""",
        encoding="utf-8",
    )
    result = _zizmor(workflows)
    report = result.stdout + result.stderr
    assert result.returncode != 0
    for audit in ("dangerous-triggers", "template-injection", "unpinned-uses", "artipacked", "excessive-permissions"):
        assert audit in report, audit


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[path.name for path in WORKFLOWS])
def test_workflow_matches_githubs_schema(workflow: Path) -> None:
    result = _run(BIN / "check-jsonschema", "--builtin-schema", "vendor.github-workflows", workflow)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dependabot_config_matches_githubs_schema() -> None:
    result = _run(BIN / "check-jsonschema", "--builtin-schema", "vendor.dependabot", GITHUB / "dependabot.yml")
    assert result.returncode == 0, result.stdout + result.stderr


#: The packages the site is built with whose internals the hooks, the overrides or the stylesheets rely on.
SITE_STACK = ("mkdocs", "mkdocs-material", "mkdocs-static-i18n", "mkdocs-jupyter", "pagefind", "pymdown-extensions")


def test_the_site_stack_is_capped_and_updated_in_one_pull_request() -> None:
    """pyproject.toml caps each package of the site's stack; Dependabot groups them into one pull request and
    may raise the caps (versioning-strategy: increase), so a new release never arrives unjudged or alone."""
    docs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    requirements = {Requirement(text).name: Requirement(text).specifier for text in docs["docs"]}
    for name in SITE_STACK:
        assert any(spec.operator == "<" for spec in requirements[name]), f"{name} has no upper bound"
    updates = yaml.safe_load((GITHUB / "dependabot.yml").read_text(encoding="utf-8"))["updates"]
    (pip,) = [update for update in updates if update["package-ecosystem"] == "pip"]
    assert pip["versioning-strategy"] == "increase"
    groups = [group["patterns"] for group in pip["groups"].values()]
    (site,) = [patterns for patterns in groups if any(fnmatch.fnmatch("mkdocs", p) for p in patterns)]
    for name in SITE_STACK:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in site), name


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    stepz: []\n", encoding="utf-8")
    assert _run(BIN / "check-jsonschema", "--builtin-schema", "vendor.github-workflows", bad).returncode != 0


def _load(workflow: Path) -> dict:
    data = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[path.name for path in WORKFLOWS])
def test_workflow_hardening(workflow: Path) -> None:
    data = _load(workflow)
    assert data["permissions"] == {"contents": "read"}
    assert "pull_request_target" not in data["on"]
    for name, job in data["jobs"].items():
        assert "timeout-minutes" in job, f"{workflow.name}: job {name} has no timeout"
        for step in job.get("steps", []):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, f"{workflow.name}: {name}"
            if "run" in step:
                assert "${{ github.event" not in step["run"], f"{workflow.name}: {name} expands event data in run:"


def test_every_cpu_job_runs_the_readmes_test_command() -> None:
    tests = _load(GITHUB / "workflows" / "tests.yml")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python3 dev.py test" in readme
    cpu_steps = [step for step in tests["jobs"]["cpu"]["steps"] if "run" in step]
    # The README's command in its two halves, each cell of the matrix once per half (tests/tooling/test_dev.py:
    # the halves are the whole suite).
    assert cpu_steps[-2]["run"] == 'python dev.py test "--$HALF"'
    assert cpu_steps[-2]["env"]["HALF"] == "${{ matrix.half }}"
    matrix = tests["jobs"]["cpu"]["strategy"]["matrix"]
    assert matrix["half"] == ["fast", "site"]
    for cell in matrix["include"]:
        assert {(other["torch"], other["half"]) for other in matrix["include"] if other["os"] == cell["os"]} == {
            (cell["torch"], "fast"),
            (cell["torch"], "site"),
        }
    # Then, on each system, a benchmark's smoke run: the benchmarks run wherever the README says the project does.
    assert cpu_steps[-1]["run"] == "python dev.py benchmarks attention_paths --quick"
    assert cpu_steps[-1]["if"] == "matrix.python == '3.13' && matrix.half == 'fast'"
    # The GPU job tests, then measures: the GPU tables of "How PyTorch runs attention" come from its artifact.
    gpu_steps = tests["jobs"]["gpu"]["steps"]
    gpu_runs = [step["run"] for step in gpu_steps if "run" in step]
    assert gpu_runs[0] == "python dev.py test"
    assert "python dev.py benchmarks attention_paths --device cuda --dtype bfloat16" in gpu_runs[1]
    upload = gpu_steps[-1]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "benchmarks/data/*-cuda*.json"
    assert set(matrix["os"]) == {"ubuntu-latest", "macos-latest", "windows-latest"}
    assert tests["jobs"]["gpu"]["env"]["REQUIRE_CUDA"] == "1"


def test_the_weekly_workflow_runs_the_command_and_can_be_started_by_hand() -> None:
    workflow = _load(GITHUB / "workflows" / "mutation.yml")
    on = workflow["on"]
    assert set(on) == {"schedule", "workflow_dispatch"}
    assert len(on["schedule"]) == 1
    (job,) = workflow["jobs"].values()
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs == ["python dev.py mutation $MODULES"]
    assert job["steps"][-1]["env"] == {"MODULES": "${{ inputs.modules }}"}


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("vendor.github-issue-forms", "ISSUE_TEMPLATE/bug_report.yml"),
        ("vendor.github-issue-config", "ISSUE_TEMPLATE/config.yml"),
    ],
)
def test_issue_templates_match_githubs_schema(schema: str, path: str) -> None:
    result = _run(BIN / "check-jsonschema", "--builtin-schema", schema, GITHUB / path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pull_requests_get_the_translation_notice() -> None:
    """The step tests/tooling/test_translations.py exercises: it runs on pull requests only, after the build has
    set up the environment, with the history it needs to compare with the base, and cannot fail the run
    (the command always exits 0, which that test checks)."""
    build = _load(GITHUB / "workflows" / "site.yml")["jobs"]["build"]
    steps = build["steps"]
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    (notice,) = [step for step in steps if "--github-base" in step.get("run", "")]
    assert notice["if"] == "github.event_name == 'pull_request'"
    assert notice["run"] == 'python dev.py translations status --github-base "$BASE_SHA"'
    assert notice["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert steps.index(notice) > next(
        i for i, step in enumerate(steps) if step.get("run") == "python dev.py docs --build"
    )


def _uses(workflow: dict) -> list[tuple[str, dict]]:
    """Each job's steps that use an action, as (job name, step)."""
    return [(name, step) for name, job in workflow["jobs"].items() for step in job.get("steps", []) if "uses" in step]


def test_every_action_is_pinned_to_one_sha_across_the_workflows() -> None:
    pins: dict[str, set[str]] = {}
    for workflow in WORKFLOWS:
        for _, step in _uses(_load(workflow)):
            action, _, ref = step["uses"].partition("@")
            pins.setdefault(action, set()).add(ref)
    assert {action: refs for action, refs in pins.items() if len(refs) > 1} == {}


def test_the_release_publishes_only_tested_packages_from_version_tags() -> None:
    """Each package from its own tag, <name>-v<version>; both are built and tested, the tagged one uploaded."""
    release = _load(GITHUB / "workflows" / "release.yml")
    assert release["on"] == {"push": {"tags": ["attention_lib-v*", "attention_exercises-v*"]}}
    build, publish = release["jobs"]["build"], release["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/attention_')"
    assert publish["environment"]["name"] == "pypi"
    assert publish["environment"]["url"] == (
        "https://pypi.org/project/${{ needs.build.outputs.name }}/${{ needs.build.outputs.version }}/"
    )
    # The build checks the tag against __version__ before `python dev.py package` builds and tests what is uploaded.
    runs = [step.get("run", "") for step in build["steps"]]
    tag_check = next(i for i, run in enumerate(runs) if "__version__" in run)
    assert build["steps"][tag_check]["env"] == {"TAG": "${{ github.ref_name }}"}
    assert tag_check < runs.index("python dev.py package")
    setup_python = next(step for step in build["steps"] if step["uses"].startswith("actions/setup-python@"))
    assert "cache" not in setup_python["with"], "what is published is built without a dependency cache"
    (upload,) = [step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]
    (download,) = [step for step in publish["steps"] if step.get("uses", "").startswith("actions/download-artifact@")]
    assert upload["with"]["path"] == "dist/${{ steps.version.outputs.name }}/"
    assert download["with"]["path"] == "dist/"
    # The tag check names the packages' folders as dev.py does.
    check = build["steps"][tag_check]["run"]
    assert '{"attention_lib": Path("."), "attention_exercises": Path("exercises")}' in check
    assert {dist.name: dist.project for dist in dev_module.DISTRIBUTIONS} == {
        "attention_lib": ROOT,
        "attention_exercises": ROOT / "exercises",
    }
    assert upload["with"]["name"] == download["with"]["name"]
    # Every pull request and CI run builds and tests the package with the same command.
    package = _load(GITHUB / "workflows" / "package.yml")["jobs"]["package"]
    assert [step["run"] for step in package["steps"] if "run" in step] == ["python dev.py package"]
    assert "\npython3 dev.py package " in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_only_the_publish_job_may_get_an_oidc_token() -> None:
    release = _load(GITHUB / "workflows" / "release.yml")
    assert release["permissions"] == {"contents": "read"}
    assert release["jobs"]["publish"]["permissions"] == {"id-token": "write"}
    for workflow in WORKFLOWS:
        data = _load(workflow)
        for name, job in data["jobs"].items():
            if "id-token" in job.get("permissions", {}) and (workflow.name, name) != ("release.yml", "publish"):
                # GitHub Pages proves its deployment with the same token; nothing else may ask for one.
                assert (workflow.name, name) == ("site.yml", "deploy"), f"{workflow.name}: {name}"


def test_the_release_uses_trusted_publishing_and_no_stored_credential() -> None:
    path = GITHUB / "workflows" / "release.yml"
    publishes = [
        (name, step) for name, step in _uses(_load(path)) if step["uses"].startswith("pypa/gh-action-pypi-publish@")
    ]
    assert [name for name, _ in publishes] == ["publish"]
    for _, step in publishes:
        assert not {"user", "password", "repository-url"} & set(step.get("with", {})), step
    assert "secrets." not in path.read_text(encoding="utf-8")


def _glob(pattern: str) -> re.Pattern[str]:
    """A workflow's path filter as GitHub matches it: ``**`` crosses folders, ``*`` does not."""
    parts = re.split(r"(\*\*/?|\*|\?)", pattern)
    wild = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(wild.get(part, re.escape(part)) for part in parts))


def _starts(workflow: str, changed: list[str]) -> bool:
    """Whether a pull request changing the files ``changed`` starts ``workflow``."""
    trigger = _load(GITHUB / "workflows" / workflow)["on"]["pull_request"] or {}
    if "paths" not in trigger:
        return True
    return any(_glob(pattern).fullmatch(path) for pattern in trigger["paths"] for path in changed)


@pytest.mark.parametrize(
    ("changed", "started"),
    [
        # A translator's pull request: the page, its notebook. The suite and the site, nothing else.
        (["docs/zh/masks.md", "docs/zh/notebooks/masks.ipynb"], {"tests.yml", "site.yml"}),
        (["README.zh-CN.md"], {"tests.yml", "site.yml"}),
        (["docs_tools/translations.py"], {"tests.yml", "site.yml", "lint.yml"}),
        (["attention_lib/masks.py"], {"tests.yml", "site.yml", "lint.yml", "package.yml"}),
        (["tests/lib/test_masks.py"], {"tests.yml", "site.yml", "lint.yml", "package.yml"}),
        (["exercises/attention_exercises/_core.py"], {"tests.yml", "site.yml", "lint.yml", "package.yml"}),
        (["tests/exercises/test_exercises.py"], {"tests.yml", "site.yml", "lint.yml", "package.yml"}),
        (["pyproject.toml"], {"tests.yml", "site.yml", "lint.yml", "package.yml"}),
        ([".github/workflows/lint.yml"], {"tests.yml", "site.yml", "lint.yml"}),
    ],
)
def test_a_pull_request_starts_only_the_workflows_its_files_can_change(changed: list[str], started: set[str]) -> None:
    names = {path.name for path in WORKFLOWS if "pull_request" in _load(path)["on"]}
    assert {name for name in names if _starts(name, changed)} == started


def test_the_linters_run_on_github_as_they_do_locally() -> None:
    lint = _load(GITHUB / "workflows" / "lint.yml")["jobs"]["lint"]
    assert [step["run"] for step in lint["steps"] if "run" in step] == ["python dev.py lint"]
    dev = (ROOT / "dev.py").read_text(encoding="utf-8")
    lint_task = dev.split('elif task == "lint":', 1)[1].split("return 0", 1)[0]
    assert 'run(venv_bin("ruff"), "check", ".")' in lint_task
    assert 'run(venv_bin("mypy"))' in lint_task
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    # The packages and the code that is never published, the tooling, the hooks, dev.py and the benchmarks.
    assert mypy["files"] == [
        "attention_lib",
        "exercises/attention_exercises",
        "docs_tools",
        "hooks",
        "dev.py",
        "benchmarks",
    ]
    assert mypy["strict"] is True
