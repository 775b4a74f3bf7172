"""Real processes for tests: waiting for a condition, reading ``/proc``, a small tmpfs for
full-disk faults. Linux only (``/proc``; mounting needs root)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01, what: str = "") -> None:
    """Waits until ``check()`` is true (``what`` it waits for names it in the failure).

    Raises:
        AssertionError: it was still false after ``timeout`` seconds
    """
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(interval)


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -c code args`` in a process of its own (this interpreter, the process
    environment plus ``env``) and returns its result."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


def _stat_fields(pid: int | str) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name: state, ppid, ..."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a container's PID 1 may not reap orphans)."""
    try:
        return _stat_fields(pid)[0] not in (b"Z", b"X")
    except OSError:  # gone (between the open and the read too)
        return False


def children(pid: int) -> list[int]:
    """The live (not zombie) child processes of ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = _stat_fields(entry)
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != b"Z":
                found.append(int(entry))
    return found


def cmdline(pid: int) -> list[str]:
    """The command line of process ``pid`` (``/proc/<pid>/cmdline``); empty once it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def processes_naming(text: str) -> list[int]:
    """Live processes (not this one, nor zombies) whose command line or environment contains
    ``text``: what a job left behind (its driver, supervisors and apps, whose environment names
    the job's id or directory)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if _stat_fields(entry)[0] == b"Z":
                continue
        except OSError:
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry}/{part}", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(entry))
                        break
            except OSError:  # gone, or not ours to read
                continue
    return found


def proc_status(pid: int, field: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


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


def fill_disk(disk: Path) -> Path:
    """Writes ``disk/filler`` until the file system refuses more (ENOSPC); returns it (remove it
    to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return filler


def unmount(path: Path) -> None:
    """Unmounts what :func:`small_tmpfs` mounted (lazily: a straggler holding a file cannot block it)."""
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)
