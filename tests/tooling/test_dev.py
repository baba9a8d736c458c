"""dev.py's own behaviour, where a contributor meets it: what it says when something is in the way."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_docs_names_a_busy_port_in_one_line_and_how_to_choose_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "dev.py", "docs", "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            timeout=600,
        )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"dev.py docs: port {port} is in use (another `mkdocs serve`?): stop it, or serve on another port:"
        f" python3 dev.py docs --port {port + 1}"
    )
    assert "Traceback" not in result.stderr


def test_every_pre_commit_hook_is_a_dev_py_task_that_exists() -> None:
    import yaml

    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert {hook["id"] for hook in hooks} == {"lint", "notebooks", "figures", "translations"}
    # dev.py without a task lists its tasks (and runs none).
    listed = subprocess.run([sys.executable, "dev.py"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    tasks = set(re.findall(r"^  python3 dev\.py (\S+)", listed.stdout, re.MULTILINE))
    for hook in hooks:
        command = hook["entry"].split()
        assert command[:2] == ["python3", "dev.py"], hook
        assert command[2] in tasks, (hook["id"], tasks)
        if len(command) > 3:  # a check mode: the task's own help names it (and nothing runs)
            result = subprocess.run(
                [sys.executable, "dev.py", command[2], "--help"], cwd=ROOT, capture_output=True, text=True, timeout=600
            )
            assert result.returncode == 0, (hook["id"], result.stdout, result.stderr)
            assert command[3] in result.stdout, (hook["id"], result.stdout)


def _collected(*paths: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return {line for line in result.stdout.splitlines() if "::" in line}


def test_the_two_halves_of_the_suite_are_the_whole_suite() -> None:
    """``dev.py test --fast`` and ``dev.py test --site`` (GitHub's two jobs) run, together, exactly what the
    README's ``dev.py test`` runs, and no test twice. (Collected twice, not three times: pytest collects for a
    folder what lies under it, so the fast half is what the whole suite has outside the site's folder, once no
    half's folder lies inside another's; the site half is collected as ``--site`` runs it, its own conftest.py
    and all.)"""
    import dev

    folders = [Path(folder) for folder in (*dev.WITHOUT_SITE, *dev.SITE)]
    assert [(a, b) for a in folders for b in folders if a != b and b.is_relative_to(a)] == []

    def under(name: str, half: list[str]) -> bool:
        return any(Path(name.split("::")[0]).is_relative_to(folder) for folder in half)

    everything, site = _collected(), _collected(*dev.SITE)
    fast = {name for name in everything if under(name, dev.WITHOUT_SITE)}
    assert fast
    assert site
    assert site == {name for name in everything if under(name, dev.SITE)}
    assert fast | site == everything
    assert all(name.startswith("tests/site/") for name in site)


def test_the_halves_are_one_at_a_time() -> None:
    result = subprocess.run(
        [sys.executable, "dev.py", "test", "--fast", "--site"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "dev.py test: --fast and --site are the two halves of the suite: give one of them, or neither"
    )
