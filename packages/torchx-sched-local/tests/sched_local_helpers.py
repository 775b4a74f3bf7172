"""Helpers shared by the tests of torchx-sched-local (real processes, no mocks)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from torchx import specs


def app(
    *cmd: str, name: str = "t", role: str = "r", replicas: int = 1, image: str = "", **kwargs: object
) -> specs.AppDef:
    """A one-role app running ``cmd``."""
    return specs.AppDef(
        name,
        [
            specs.Role(
                role, image=image or os.getcwd(), entrypoint=cmd[0], args=list(cmd[1:]), num_replicas=replicas, **kwargs
            )
        ],  # type: ignore[arg-type]
    )


def py(code: str, *args: str, **kwargs: object) -> specs.AppDef:
    """A one-role app running ``python -c code args``."""
    return app(sys.executable, "-c", code, *args, **kwargs)


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01) -> None:
    """Waits until ``check()`` is true; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        time.sleep(interval)


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -c code args`` (a separate launcher process) and returns its result."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m torchx ARGS`` and returns its result."""
    return subprocess.run(
        [sys.executable, "-m", "torchx", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def small_tmpfs(path: Path, size: str = "1m") -> Path:
    """Mounts a real tmpfs of ``size`` on ``path`` (created; needs root); undo with :func:`unmount`."""
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"these fault-injection tests mount a tmpfs and need root: {proc.stderr.strip()}"
    return path


def unmount(path: Path) -> None:
    """Unmounts what :func:`small_tmpfs` mounted (lazily: a straggler holding a file cannot block it)."""
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def proc_status(pid: int, field: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != b"Z":
                found.append(int(entry))
    return found
