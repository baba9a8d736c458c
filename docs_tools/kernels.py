"""Jupyter kernels for running the notebooks, forked from a process that has already imported torch.

Each notebook still runs in a kernel of its own: a new process, with nothing defined in it, that imports
what its cells import. Only the modules are loaded already: starting a kernel the usual way costs about
2.5 s of CPU before the first cell runs, 1.5 s of it ``import torch``, and the suite starts 22.

Python's ``multiprocessing`` forkserver does the forking: one server per process that asks for a kernel,
started with the modules in ``PRELOAD`` imported, forks a child for each kernel. (PyTorch supports being
forked after its import, before it has run anything in parallel: that is how a DataLoader starts its
workers.) Where there is no forkserver (Windows), or the kernel is not Python's own ipykernel, the
kernel is started as Jupyter starts it.

    NotebookClient(notebook, kernel_manager_class=ForkedKernelManager).execute()
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, cast

from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning.local_provisioner import LocalProvisioner

#: What the forkserver imports before it forks a kernel or a script: what every notebook imports, and the kernel.
#: tqdm.auto, which transformers imports (the real-model notebook), goes before the kernel: imported inside one
#: without ipywidgets (Colab has them, the test suite does not) it warns "IProgress not found" on stderr, and the
#: cell's output is no longer the page's; imported here it is tqdm's plain progress bar. A module that is not
#: installed is skipped.
PRELOAD = ["torch", "attention_lib", "tqdm.auto", "ipykernel.kernelapp", __name__]
#: How a kernel spec starts ipykernel; what follows is the kernel's command line (``-f <connection file>``).
IPYKERNEL = ["-m", "ipykernel_launcher"]


@functools.cache  # the preload is read once, when the forkserver starts
def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _start_in(cwd: str, env: dict[str, str]) -> None:
    """A forked child starts where, and with the environment, a new process would."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    # torch read OMP_NUM_THREADS when the forkserver imported it; a process started afresh reads its own.
    threads = env.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        import torch

        torch.set_num_threads(int(threads))


def _run_kernel(argv: list[str], cwd: str, env: dict[str, str]) -> None:
    """The forked child: becomes the kernel that ``python -m ipykernel_launcher <argv>`` would start."""
    os.setsid()  # a process group of its own, as Jupyter gives a kernel, so that signals reach only it
    _start_in(cwd, env)
    from ipykernel.kernelapp import launch_new_instance

    # The process the kernel outlives by no more than a moment (Jupyter sets it through JPY_PARENT_PID, read
    # when the module was imported): the forkserver, which exits with the process that asked for the kernel.
    launch_new_instance([*argv, f"--IPKernelApp.parent_handle={os.getppid()}"])


class _Process:
    """The part of ``subprocess.Popen`` that Jupyter's provisioner uses, for a forked child."""

    stdin = stdout = stderr = None

    def __init__(self, process: Any) -> None:
        self._process = process
        self.pid = process.pid

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self) -> int | None:
        self._process.join()
        return self._process.exitcode

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def kill(self) -> None:
        self._process.kill()

    def terminate(self) -> None:
        self._process.terminate()


class ForkedProvisioner(LocalProvisioner):
    """Jupyter's local provisioner, launching ipykernel as a child of the forkserver."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        if cmd[1:3] != IPYKERNEL or "forkserver" not in multiprocessing.get_all_start_methods():
            return await super().launch_kernel(cmd, **kwargs)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        process = _context().Process(target=_run_kernel, args=(cmd[3:], cwd, dict(kwargs.get("env") or os.environ)))
        process.start()
        # The provisioner declares a Popen; it calls only what _Process has.
        self.process = cast(subprocess.Popen[Any], _Process(process))
        self.pid = process.pid
        self.pgid = process.pid  # _run_kernel made it a group leader
        self.cwd = cwd
        return self.connection_info


class ForkedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels ``ForkedProvisioner`` starts."""

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        if self.provisioner is None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", None) or str(uuid.uuid4())
            self.provisioner = ForkedProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        if os.name == "posix":
            # Unix sockets of the kernel's own, not TCP ports: a port found free is taken by another process now
            # and then before the kernel binds it, on a busy machine ("Address already in use"), and the kernel
            # dies. The path stays short, as a socket's must (108 bytes).
            self.transport = "ipc"
            self.ip = os.path.join(tempfile.gettempdir(), f"kernel-{self.kernel_id[:8]}")
        return await super()._async_pre_start_kernel(**kw)


def _run_script(script: str, cwd: str, env: dict[str, str], out: str, err: str) -> None:
    """The forked child: runs ``script`` as ``python script`` would, its output into the files ``out``, ``err``."""
    _start_in(cwd, env)
    # multiprocessing flushes these when the child ends, and prints an uncaught exception to sys.stderr.
    sys.stdout = open(out, "w", encoding="utf-8")  # noqa: SIM115 (open until the process ends)
    sys.stderr = open(err, "w", encoding="utf-8")  # noqa: SIM115
    sys.argv = [script]
    runpy.run_path(script, run_name="__main__")


def run_script(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``script`` as ``python script`` would, in its folder, in a new process that has nothing defined: a
    child of the forkserver, which has imported torch already (about 1.5 s a script saved); where there is no
    forkserver (Windows), a new Python. Returns its exit code and what it printed."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        command = [sys.executable, str(script)]
        return subprocess.run(command, cwd=script.parent, capture_output=True, text=True, encoding="utf-8", env=env)
    out, err = script.with_suffix(".out"), script.with_suffix(".err")
    process = _context().Process(target=_run_script, args=(str(script), str(script.parent), env, str(out), str(err)))
    process.start()
    process.join(timeout=300)
    if process.exitcode is None:
        process.kill()
        process.join()
    stdout, stderr = (path.read_text(encoding="utf-8") if path.exists() else "" for path in (out, err))
    return subprocess.CompletedProcess([str(script)], process.exitcode or 0, stdout, stderr)
