"""The pages under ``docs/`` are collected like test files: every ```` ```python ```` block runs and what it
prints is compared with the output block under it (``docs_tools.examples``). The rest of the suite's
fixtures are in ``tests/conftest.py``.
"""

from __future__ import annotations

import pytest

from docs_tools.examples import sybil
from docs_tools.project import DOCS

pytest_collect_file = sybil(DOCS).pytest()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list) -> None:
    """A page's blocks share one namespace, in order: under pytest-xdist (``--dist loadgroup``, as
    ``dev.py test`` runs the suite) they all go to the same worker."""
    for item in items:
        if item.path.suffix == ".md":
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(DOCS).as_posix()))
