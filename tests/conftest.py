"""Shared fixtures: devices (CUDA cases marked ``gpu``), hypothesis profiles and small helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
HAS_CUDA = torch.cuda.is_available()

#: Parametrize over this to run a test on the CPU and, where present, on CUDA.
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")]),
]

# "default" is what the README's test command runs: fixed examples (derandomize), so a failure
# reproduces on every machine. "thorough" draws fresh examples, ten times as many.
settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    return torch.device(request.param)


def pytest_sessionstart(session: pytest.Session) -> None:
    # The GPU job sets REQUIRE_CUDA=1: there, a torch without CUDA must fail the run, not skip the
    # gpu-marked tests and pass.
    if os.environ.get("REQUIRE_CUDA") == "1" and not HAS_CUDA:
        raise pytest.UsageError(f"REQUIRE_CUDA=1, but torch {torch.__version__} sees no CUDA device")


def pytest_report_header() -> str:
    cuda = torch.cuda.get_device_name(0) if HAS_CUDA else "none (gpu-marked tests are skipped)"
    return f"torch {torch.__version__}; CUDA device: {cuda}"


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole site, built once per test run with ``mkdocs build --strict``."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out
