"""What every benchmark script shares: interleaved timing, peak memory, and where the numbers came from.

Imported by the scripts next to it (``python3 benchmarks/kv_cache.py`` puts this folder on the path).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

try:
    import resource  # POSIX: the peak resident size when Linux's /proc does not say
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

#: Where the scripts write the data that the pages show (and docs_tools draws the plots from).
DATA = Path(__file__).resolve().parent / "data"


def time_interleaved(
    forwards: Mapping[str, Callable[[], object]], rounds: int, calls: int, warmup: int
) -> dict[str, list[list[float]]]:
    """Seconds per call: for each candidate, one list of ``calls`` samples per round.

    Every round runs each candidate ``calls`` times, in a fresh random order, so that neither a slow
    drift of the machine nor the candidate that ran just before (the explicit path leaves gigabytes of
    freed memory behind it) favours one of them.
    """
    names = list(forwards)
    for name in names:
        for _ in range(warmup):
            forwards[name]()
    rng = random.Random(0)
    samples: dict[str, list[list[float]]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in rng.sample(names, len(names)):
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                forwards[name]()
                times.append(time.perf_counter() - start)
            samples[name].append(times)
    return samples


def synchronized(step: Callable[[], object], synchronize: Callable[[], object]) -> Callable[[], object]:
    """``step``, then ``synchronize``: on a GPU, ``torch.cuda.synchronize``, so that a timed call ends when its
    kernels have run, not when they were queued."""
    return lambda: (step(), synchronize())


def per_round_ratio(numerator: list[list[float]], denominator: list[list[float]]) -> float:
    """Median over rounds of the ratio within a round: what other processes do between rounds cancels out."""
    ratios = [statistics.median(a) / statistics.median(b) for a, b in zip(numerator, denominator, strict=True)]
    return statistics.median(ratios)


def current_rss_kib() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            resident_pages = int(f.read().split()[1])
    except OSError:
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE") // 1024


def reset_peak_rss() -> None:
    """Lower this process's peak resident size to its current one, where Linux allows it (4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_kib() -> int:
    """Peak resident size of this process, in KiB.

    Linux's ``VmHWM`` first: ``getrusage().ru_maxrss`` carries the parent's peak over fork and exec,
    so in a process started by this benchmark it would report the parent's gigabytes from the timing.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    if resource is None:
        return _windows_peak_kib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS reports bytes, Linux KiB


def _windows_peak_kib() -> int:
    """The peak working set of this process, from Windows' GetProcessMemoryInfo (by hand, with ctypes: the
    standard library has no call for it, and one number does not justify a dependency such as psutil)."""
    # Only Windows lacks both /proc and the resource module; mypy checks what follows as Windows code.
    if sys.platform != "win32":
        raise OSError(f"no way to read the peak resident size on {sys.platform}: no /proc, no resource module")
    import ctypes
    from ctypes import wintypes

    class Counters(ctypes.Structure):  # PROCESS_MEMORY_COUNTERS
        _fields_ = [
            ("cb", wintypes.DWORD),
            ("PageFaultCount", wintypes.DWORD),
            *((name, ctypes.c_size_t) for name in (
                "PeakWorkingSetSize", "WorkingSetSize", "QuotaPeakPagedPoolUsage", "QuotaPagedPoolUsage",
                "QuotaPeakNonPagedPoolUsage", "QuotaNonPagedPoolUsage", "PagefileUsage", "PeakPagefileUsage",
            )),
        ]  # fmt: skip

    counters = Counters(cb=ctypes.sizeof(Counters))
    process = ctypes.windll.kernel32.GetCurrentProcess()
    # A library loaded with use_last_error keeps the call's error code for ctypes.get_last_error().
    psapi = ctypes.WinDLL("psapi", use_last_error=True)
    if not psapi.GetProcessMemoryInfo(process, ctypes.byref(counters), counters.cb):
        raise OSError(ctypes.get_last_error(), "GetProcessMemoryInfo failed")
    return counters.PeakWorkingSetSize // 1024


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load average unknown"


def device_name(device: str) -> str:
    return torch.cuda.get_device_name(0) if device == "cuda" else cpu_model()


def provenance(device: str = "cpu") -> dict[str, object]:
    """The machine, the software and the date, written next to every number a page shows."""
    return {
        "device": device,
        "device_name": device_name(device),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "date": datetime.date.today().isoformat(),
    }


def write_data(name: str, data: dict[str, object]) -> Path:
    """Write ``data`` to ``benchmarks/data/<name>.json`` (sorted keys, so a rerun diffs line by line)."""
    DATA.mkdir(exist_ok=True)
    path = DATA / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(DATA.parent.parent)}")
    return path
