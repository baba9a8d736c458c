"""The command line of the generators (docs_tools/generated.py): what `python3 dev.py notebooks` and `figures` say."""

from __future__ import annotations

from pathlib import Path

from docs_tools import generated


def test_a_generator_reports_only_the_files_it_changed(tmp_path: Path, capsys) -> None:
    """`python3 dev.py notebooks` (and figures) says which files changed, not every file it could have written."""
    same, other, new = tmp_path / "same.txt", tmp_path / "other.txt", tmp_path / "new" / "new.txt"
    same.write_text("a", encoding="utf-8")
    other.write_text("old", encoding="utf-8")
    outputs = {same: lambda: "a", other: lambda: "b", new: lambda: "c"}
    assert generated.main([], outputs, "test", "cmd") == 0
    assert capsys.readouterr().out.splitlines() == [
        f"updated {other}",
        f"created {new}",
        "2 of 3 file(s) changed",
    ]
    assert (other.read_text(encoding="utf-8"), new.read_text(encoding="utf-8")) == ("b", "c")
    assert generated.main([], outputs, "test", "cmd") == 0
    assert capsys.readouterr().out == "all 3 file(s) up to date\n"
