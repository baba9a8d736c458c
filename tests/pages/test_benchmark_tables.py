"""The measurements the pages show are the data that benchmarks/ wrote, in every language."""

from __future__ import annotations

import json

import pytest

from docs_tools import benchmark_tables
from docs_tools.config import complete_locales
from docs_tools.project import DOCS

LOCALES = complete_locales()
PAGES = [(locale, name) for name in benchmark_tables.TABLES for locale in LOCALES]


@pytest.mark.parametrize(("locale", "name"), PAGES, ids=[f"{locale}/{name}" for locale, name in PAGES])
def test_the_page_shows_the_data(locale: str, name: str) -> None:
    assert benchmark_tables.problems(DOCS / locale / name) == []


def test_every_data_file_says_where_its_numbers_come_from() -> None:
    for path in sorted(benchmark_tables.DATA.glob("*.json")):
        info = json.loads(path.read_text(encoding="utf-8"))["provenance"]
        assert {"device", "device_name", "threads", "torch", "date"} <= set(info), path.name


def test_a_page_that_no_longer_matches_fails() -> None:
    page = DOCS / "en" / "attention-backends.md"
    text = page.read_text(encoding="utf-8")
    row = benchmark_tables.attention_paths()[0]
    changed = row.replace(row.split(" | ")[1], "1")  # our module's forward time, as if measured again
    (found,) = benchmark_tables.problems(page, text.replace(row, changed))
    assert "the paths table does not show benchmarks/data/attention-cpu.json" in found
    # Both data files (the CPU's and the GPU's) are dated 2026: each one's date is found missing.
    found = benchmark_tables.problems(page, text.replace("2026", "2025"))
    assert [problem.split(" from ")[-1] for problem in found] == ["attention-cpu.json", "attention-cuda-bfloat16.json"]
    assert all("does not name" in problem for problem in found)
    gpu_row = benchmark_tables.attention_paths_gpu()[0]
    changed = gpu_row.replace(gpu_row.split(" | ")[1], "0.01")  # as if measured again
    (found,) = benchmark_tables.problems(page, text.replace(gpu_row, changed))
    assert "the GPU paths table does not show benchmarks/data/attention-cuda-bfloat16.json" in found
    number = benchmark_tables.attention_numbers()[0]
    assert benchmark_tables.problems(page, text.replace(number, "?")) != []
