"""The command line shared by the scripts that write generated files (figures, notebooks).

``--check`` writes nothing and exits 1 when a committed file differs from what would be generated;
the tests call the same ``stale`` function.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path

from docs_tools.project import ROOT

#: Each generated file and the function that produces its text.
Outputs = Mapping[Path, Callable[[], str]]


def stale(outputs: Outputs) -> list[Path]:
    """The files whose committed text differs from what their function produces now."""
    return [path for path, make in outputs.items() if not path.exists() or path.read_text(encoding="utf-8") != make()]


def main(argv: list[str], outputs: Outputs, description: str, command: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is out of date")
    if parser.parse_args(argv).check:
        out_of_date = stale(outputs)
        for path in out_of_date:
            print(f"out of date: {_shown(path)} (run {command})")
        return 1 if out_of_date else 0
    changed = 0
    for path, make in outputs.items():
        text, existed = make(), path.exists()
        if existed and path.read_text(encoding="utf-8") == text:
            continue  # the same as generated: neither written nor reported, so that the files that changed stand out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"{'updated' if existed else 'created'} {_shown(path)}")
        changed += 1
    print(f"{changed} of {len(outputs)} file(s) changed" if changed else f"all {len(outputs)} file(s) up to date")
    return 0


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
