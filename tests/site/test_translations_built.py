"""The translations on the built site and on copies of the project: the banner marks exactly the outdated
translations, the status page lists every page, and the translator's whole path (and adding a third language)
works on a copy of the project, built with MkDocs."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_tools import config as site_config
from docs_tools import records

ROOT = Path(__file__).resolve().parents[2]
LOCALES = [language.locale for language in site_config.languages()]
PAGES = records.pages()


def _git(root: Path, *args: str) -> str:
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.org", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# ---------------------------------------------------------------------------------------------------
# The site: banners and the status page
# ---------------------------------------------------------------------------------------------------


def _banner(page: Path) -> str | None:
    match = re.search(
        r'class="admonition warning translation-banner" data-translation="(\w+)"', page.read_text("utf-8")
    )
    return match.group(1) if match else None


def test_the_site_shows_a_banner_exactly_on_outdated_translations(site: Path) -> None:
    statuses = records.statuses()
    for page, states in statuses.items():
        name = page.removesuffix(".md").removesuffix("index")
        assert _banner(site / name / "index.html") is None, page
        for locale, state in states.items():
            want = {"outdated": "outdated", "missing": "missing"}.get(state)
            assert _banner(site / locale / name / "index.html") == want, (locale, page)
            notebook = site / locale / "notebooks" / name / "index.html"
            if notebook.exists():
                assert _banner(notebook) == want, (locale, page, "notebook")


@pytest.mark.parametrize("prefix", ["", "zh/"])
def test_the_status_page_lists_every_page_and_its_state(site: Path, prefix: str) -> None:
    text = (site / prefix / "translation-status" / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr>\s*<td><a href="([^"]+)">.*?</a></td>\s*<td><span data-translation-state="([^"]+)">', text)
    statuses = records.statuses()
    assert len(rows) == len(statuses)
    for href, state in rows:
        page = href.removeprefix("../").removesuffix("/").removesuffix(".") or "index"
        page += ".md"
        assert statuses[page]["zh"] == state, page
    summary = html.unescape(re.sub(r"<[^>]+>", "", text))
    count = len(statuses)
    assert (f"简体中文: of {count} pages," if not prefix else f"简体中文：{count} 个页面中") in summary


# ---------------------------------------------------------------------------------------------------
# The translator's path, and a third language, on a copy of the project
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def copy(tmp_path: Path, copy_project) -> Path:
    return copy_project(tmp_path / "project")


def _run(root: Path, *args: str, ok: bool = True) -> str:
    result = subprocess.run(
        [sys.executable, *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert (result.returncode == 0) is ok, f"{args} gave {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _translations(root: Path, *args: str, ok: bool = True) -> str:
    return _run(root, "-m", "docs_tools.translations", *args, ok=ok)


def _build(root: Path) -> Path:
    _run(root, "-m", "mkdocs", "build", "--strict", "--site-dir", str(root / "site"))
    return root / "site"


NEW_ENGLISH = """
## Counting masked positions { #counting-masked }

Each row of the causal mask hides the positions after its own, so it hides 15 of the 36 pairs.

```python
print(int(torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1).sum()))
```

```output
15
```
"""

NEW_CHINESE = """
## 统计被遮蔽的位置 { #counting-masked }

因果掩码的每一行都遮住该行之后的位置，所以 36 个位置对中有 15 个被遮蔽。

```python
print(int(torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1).sum()))
```

```output
15
```
"""


def test_the_translators_path(copy: Path) -> None:
    """English page changes → the Chinese page is reported outdated and shows the banner → the translator
    updates it and its record → every check is green and the banner is gone."""
    english, chinese = copy / "docs" / "en" / "masks.md", copy / "docs" / "zh" / "masks.md"
    _translations(copy, "update", "zh/masks.md")  # start from an up-to-date translation

    # 1. A writer adds a section to the English page, and a sentence to its summary (and regenerates the
    # notebooks, as the guide says).
    english.write_text(english.read_text(encoding="utf-8") + NEW_ENGLISH, encoding="utf-8")
    _edit(english, "## Summary { #summary }\n\n", "## Summary { #summary }\n\nIn short:\n\n")
    _run(copy, "-m", "docs_tools.notebooks")
    _git(copy, "commit", "-q", "-am", "Masks: count the masked positions")

    # 2. The two sections are reported outdated: by the status command, and by the notice on the pull request.
    status = _translations(copy)
    sections = len(records.sections(english.read_text(encoding="utf-8")))
    assert re.search(rf"^masks\.md +outdated {sections - 2}/{sections} ", status, re.MULTILINE)
    assert "zh/masks.md：待更新的小节：#summary、#counting-masked\n" in status  # said in the page's language
    notices = _translations(copy, "status", "--github-base", "HEAD~1")
    assert notices.startswith("::notice file=docs/zh/masks.md,title=Translation now outdated::")
    assert "(#summary, #counting-masked)" in notices
    diff = _translations(copy, "diff", "zh/masks.md")
    assert "+## Counting masked positions { #counting-masked }" in diff
    assert "\n+In short:\n" in diff

    # 3. The built page shows the banner, in Chinese, linking to the English page; so does its notebook.
    site = _build(copy)
    page = (site / "zh" / "masks" / "index.html").read_text(encoding="utf-8")
    assert _banner(site / "zh" / "masks" / "index.html") == "outdated"
    assert "译文待更新" in page
    assert '<a href="../../masks/" hreflang="en">阅读英文原文</a>' in page
    # It names the two sections, under their Chinese title where there is one, each linked to its English.
    listed = re.findall(
        r'<li><a href="([^"]+)" hreflang="en">([^<]+)</a></li>', page.split("admonition warning translation-banner")[1]
    )
    assert listed == [("../../masks/#summary", "小结"), ("../../masks/#counting-masked", "Counting masked positions")]
    assert _banner(site / "zh" / "notebooks" / "masks" / "index.html") == "outdated"
    notebook = (site / "zh" / "notebooks" / "masks" / "index.html").read_text(encoding="utf-8")
    assert '<li><a href="../../../masks/#summary" hreflang="en">小结</a></li>' in notebook
    assert _banner(site / "masks" / "index.html") is None
    status = (site / "zh" / "translation-status" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'href="\.\./masks/">掩码</a></td>\s*<td><span data-translation-state="outdated">待更新', status)
    current = sections - 2
    counted = f'data-sections-current="{current}" data-sections="{sections}">{sections} 个小节中 {current} 个已是最新'
    assert counted in status

    # 4. The translator checks the page: the checks name what to do; the record cannot be updated yet.
    check = _translations(copy, "check", "zh/masks.md", ok=False)
    assert "docs/zh/masks.md" in check
    assert "'## Counting masked positions { #counting-masked }'（docs/en/masks.md:" in check
    assert "如何修复：标题 id 永远不翻译" in check
    assert "未记录" in _translations(copy, "update", "zh/masks.md", ok=False)

    # 5. The translator translates the new section and records it.
    chinese.write_text(chinese.read_text(encoding="utf-8") + NEW_CHINESE, encoding="utf-8")
    assert "现已记录 docs/en/masks.md 的全部小节：已是最新" in _translations(copy, "update", "zh/masks.md")
    _run(copy, "-m", "docs_tools.notebooks")

    # 6. All green: status, the structure checks, the notebooks, the page's code and outputs, the banner gone.
    assert re.search(r"^masks\.md +up to date", _translations(copy), re.MULTILINE)
    assert _translations(copy, "check") == "All translation checks passed.\n"
    _run(copy, "-m", "docs_tools.notebooks", "--check")
    _run(
        copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "docs/en/masks.md", "docs/zh/masks.md",
        "tests/pages/test_docs.py", "tests/pages/test_glossary.py", "-k", "masks or glossary",
    )  # fmt: skip
    site = _build(copy)
    assert _banner(site / "zh" / "masks" / "index.html") is None
    assert _banner(site / "zh" / "notebooks" / "masks" / "index.html") is None
    assert "counting-masked" in (site / "zh" / "masks" / "index.html").read_text(encoding="utf-8")


def test_adding_a_third_language(copy: Path) -> None:
    """Scaffold French: it is configured, every page is missing, the checks pass and the site builds,
    showing the English pages under a banner at /fr/."""
    out = _translations(copy, "add-language", "fr", "--name", "Français")
    # Until they are translated, the French notebook pages are the English notebooks: mkdocs-jupyter's cache,
    # keyed on a notebook's content, holds them already rendered, as a second French build would find them.
    cache = copy / ".cache" / "mkdocs-jupyter"
    if (cache / "en").is_dir():
        shutil.copytree(cache / "en", cache / "fr")
    assert f"All {len(PAGES)} pages are missing" in out
    assert "  - locale: fr\n          name: Français\n          build: true\n" in (copy / "mkdocs.yml").read_text(
        encoding="utf-8"
    )
    assert [(language.locale, language.complete) for language in site_config.languages(copy)] == [
        ("zh", True),
        ("fr", False),
    ]
    status = _translations(copy)
    assert re.search(r"^masks\.md +up to date (\d+)/\1 +missing", status, re.MULTILINE)
    assert f"Français (fr): 0 up to date, 0 outdated, {len(PAGES)} missing" in status
    assert _translations(copy, "check") == "All translation checks passed.\n"
    assert "already configured" in _translations(copy, "add-language", "fr", "--name", "Français", ok=False)
    assert "expected a language code" in _translations(copy, "add-language", "French", "--name", "x", ok=False)

    site = _build(copy)
    page = (site / "fr" / "masks" / "index.html").read_text(encoding="utf-8")
    assert _banner(site / "fr" / "masks" / "index.html") == "missing"
    assert "This page has not been translated yet, so it is shown in English." in page
    assert re.search(r"<h1[^>]*>Masks", page)
    assert _banner(site / "fr" / "notebooks" / "masks" / "index.html") == "missing"
    # The English pages themselves are untouched by the French build's fallback copies.
    assert _banner(site / "notebooks" / "masks" / "index.html") is None
    assert '<html lang="en"' in (site / "notebooks" / "masks" / "index.html").read_text(encoding="utf-8")
    assert 'href="../notebooks/masks/"' in page  # the French navigation stays in French URLs
    assert 'hreflang="fr"' in (site / "masks" / "index.html").read_text(encoding="utf-8")  # the language menu
    assert _banner(site / "zh" / "masks" / "index.html") is None
    status = html.unescape((site / "translation-status" / "index.html").read_text(encoding="utf-8"))
    assert f"Français: of {len(PAGES)} pages, 0 up to date, 0 outdated, {len(PAGES)} missing;" in status
