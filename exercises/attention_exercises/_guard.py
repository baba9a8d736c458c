"""Running a reader's code without letting it take the notebook down: a time
limit on each call, and torch's global settings as they were afterwards."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
import torch.utils._device as torch_device

#: Seconds one call of the reader's code may take (``set_time_limit``): the
#: checks' inputs are small, so a right answer takes milliseconds.
_limit: list[float | None] = [5.0]


def set_time_limit(seconds: float | None) -> None:
    """Let each call of your code take at most ``seconds`` (5 by default)
    before the check stops it with a ✗; ``None`` for no limit.

    The limit needs signals: it holds where Python runs ``check`` in its
    main thread on Linux or macOS (a notebook, a script, the REPL). On
    Windows, or in another thread, there is none, and an answer that never
    returns hangs ``check`` until you interrupt it (Ctrl-C, or the
    notebook's stop button)."""
    if seconds is not None and not seconds > 0:
        raise ValueError(
            f"seconds must be a positive number or None, got {seconds!r}"
        )
    _limit[0] = seconds


def time_limit() -> float | None:
    return _limit[0]


class TimeUp(BaseException):
    """The reader's call ran past the limit. A BaseException, as
    KeyboardInterrupt is, so that an answer's ``except Exception`` does not
    swallow it."""


def _can_time() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )


# The trace functions that stop an answer, and what they call, run where
# coverage, itself a trace function, cannot see them: no cover.
def _ours(frame: FrameType) -> bool:  # pragma: no cover
    name = frame.f_globals.get("__name__", "")
    return isinstance(name, str) and name.startswith(
        ("attention_exercises", "contextlib")
    )


def _stop(frame: FrameType, event: str, arg: Any) -> Any:  # pragma: no cover
    """A trace function that raises `TimeUp` at the reader's next line (an
    error in a trace function turns tracing off: it raises once)."""
    if _ours(frame):
        return None
    if event == "line":
        raise TimeUp
    return _stop


def _collecting(frame: FrameType | None) -> bool:
    """Whether the alarm came while a garbage collector's callback ran (one
    that a library registered), where an exception cannot propagate: Python
    reports it as unraisable and goes on."""
    callbacks = {
        getattr(callback, "__code__", None) for callback in gc.callbacks
    }
    while frame is not None:
        if frame.f_code in callbacks:
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def limited() -> Iterator[None]:
    """Raise `TimeUp` in the code run inside once it takes longer than the
    limit, and again every 0.2 s after. Code that catches it (a bare
    ``except:`` in a loop) is then stopped at its every next line."""
    seconds = _limit[0]
    if seconds is None or not _can_time():
        yield
        return
    fired = [0]
    trace = sys.gettrace()

    def up(signum: int, frame: FrameType | None) -> None:
        if _collecting(frame):
            return  # raised there, it would be lost: the next alarm raises
        fired[0] += 1
        # The first was caught: stop the reader's frames.
        if fired[0] > 1:  # pragma: no cover
            sys.settrace(_stop)
            while frame is not None:
                if not _ours(frame):
                    frame.f_trace = _stop
                frame = frame.f_back
        raise TimeUp(seconds)

    previous = signal.signal(signal.SIGALRM, up)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if fired[0] > 1:  # pragma: no cover
            sys.settrace(trace)


@dataclass(frozen=True)
class _Settings:
    dtype: torch.dtype
    device: torch.device | None  # None: none set (the CPU, no device mode)
    grad: bool
    threads: int
    deterministic: bool
    warn_only: bool
    anomaly: bool


def _default_device() -> torch.device | None:
    """The device ``torch.set_default_device`` set, ``None`` where none is
    set: then tensors are made on the CPU and no device mode runs, which
    would slow every torch call and turn torch's fast paths off (torch 2.2
    cannot tell, and says ``None``)."""
    current = getattr(torch_device, "CURRENT_DEVICE", None)
    return None if current is None else torch.device(current)


def _settings() -> _Settings:
    return _Settings(
        dtype=torch.get_default_dtype(),
        device=_default_device(),
        grad=torch.is_grad_enabled(),
        threads=torch.get_num_threads(),
        deterministic=torch.are_deterministic_algorithms_enabled(),
        warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        anomaly=torch.is_anomaly_enabled(),
    )


def _apply(settings: _Settings) -> None:
    torch.set_default_dtype(settings.dtype)
    # Only a change: setting the device, even the one in force, starts a
    # device mode, and None ends it.
    if _default_device() != settings.device:
        torch.set_default_device(settings.device)
    torch.set_grad_enabled(settings.grad)
    if torch.get_num_threads() != settings.threads:
        torch.set_num_threads(settings.threads)
    # Only a change: the first call imports torch._inductor, which took
    # 1.3 s of a learner's first check.
    now = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    if now != (settings.deterministic, settings.warn_only):
        torch.use_deterministic_algorithms(
            settings.deterministic, warn_only=settings.warn_only
        )
    torch.set_anomaly_enabled(settings.anomaly)


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Undo what the code run inside changes of torch's global settings: a
    right answer that turns autograd off or the default dtype to float64 on
    its way is judged on what it returns, and the checks after it run as
    written."""
    saved = _settings()
    try:
        yield
    finally:
        _apply(saved)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Run the checks with the settings they are written for (float32 on
    the CPU, autograd on), whatever the notebook set; afterwards, restore
    the notebook's settings and random state, whatever the answer set."""
    cuda: list[Any] = (
        list(range(torch.cuda.device_count()))
        if torch.cuda.is_initialized()
        else []
    )
    with torch.random.fork_rng(devices=cuda), kept():
        now = _settings()
        _apply(
            dataclasses.replace(
                now,
                dtype=torch.float32,
                device=None,
                grad=True,
                deterministic=False,
                warn_only=False,
                anomaly=False,
            )
        )
        yield
