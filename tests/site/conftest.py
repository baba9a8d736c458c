"""The site as a translator's pull request leaves it: the fixture of the tests that look at an outdated
translation in the browser (tests/site/test_translation_status.py, tests/site/test_accessibility.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The two English sections of masks.md that the copy changes, and the page it marks reviewed.
CHANGED = {
    "setup": ("## Where we start { #setup }\n\n", "## Where we start { #setup }\n\nA new first sentence.\n\n"),
    "summary": ("## Summary { #summary }\n\n", "## Summary { #summary }\n\nIn short:\n\n"),
}
REVIEWED, REVIEWER = "attention-scores.md", "li-wei"


def _python(root: Path, *args: str) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="session")
def outdated_site(tmp_path_factory: pytest.TempPathFactory, copy_project, serve) -> Iterator[dict]:
    """A copy of the project in which two sections of the English masks page changed since their translation
    and a second person reviewed the Chinese attention-scores page, built and served; yields its address
    (``url``), the changed sections' ids (``changed``), the reviewed page and the reviewer."""
    root = copy_project(tmp_path_factory.mktemp("outdated") / "project")
    english = root / "docs" / "en" / "masks.md"
    text = english.read_text(encoding="utf-8")
    for old, new in CHANGED.values():
        assert old in text
        text = text.replace(old, new, 1)
    english.write_text(text, encoding="utf-8")
    _python(root, "-m", "docs_tools.translations", "review", f"zh/{REVIEWED}", "--by", REVIEWER)
    _python(root, "-m", "mkdocs", "build", "--strict", "--site-dir", str(root / "site"))
    with serve(root / "site") as url:
        yield {"url": url, "changed": list(CHANGED), "reviewed": REVIEWED, "reviewer": REVIEWER}
