"""A torchx client with a HOME of its own: a "machine" in tests of what another machine sees.

Tests of jobs that must outlive the machine that submitted them submit from one
:class:`Machine` in its own PID namespace (every process it started dies when ``torchx``
returns), move its HOME away (:meth:`Machine.gone`), and read the job from a second one that
has none of the first one's state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: variables that would point a client at another's state (state, cache and config homes)
_FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
_PRIVATE_PREFIXES = ("XDG_", "TORCHX_MANAGED", "TORCHX_LOCAL", "TORCHX_SWEEP", "TORCHX_STATE")


class Machine:
    """A torchx client whose HOME is ``root/name`` (created) and whose environment names no
    other state directory."""

    def __init__(self, root: Path, name: str) -> None:
        self.home = root / name
        self.home.mkdir(parents=True)

    def env(self) -> dict[str, str]:
        """The client's environment: this process's, with its own HOME and no state overrides."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_PRIVATE_PREFIXES)}
        env["HOME"] = str(self.home)
        return env

    def torchx(
        self, *args: str, isolated: bool = False, check: bool = True, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``torchx ARGS`` as this machine (in its HOME); ``isolated``: in a PID namespace
        of its own that is torn down, every process in it killed, when ``torchx`` returns."""
        cmd = [sys.executable, "-m", "torchx", *args]
        if isolated:
            cmd = ["unshare", "--pid", "--fork", "--kill-child", *cmd]
        proc = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=timeout, cwd=self.home)
        if check and proc.returncode != 0:
            raise AssertionError(f"torchx {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    def status(self, handle: str) -> dict[str, Any]:
        """``torchx status --json HANDLE`` as this machine sees it."""
        data: dict[str, Any] = json.loads(self.torchx("status", "--json", handle).stdout)
        return data

    def ended(self, handle: str, timeout: float = 300) -> dict[str, Any]:
        """``status --json`` of ``handle`` once it reads a final state (SUCCEEDED, FAILED, CANCELLED).

        Raises:
            AssertionError: it did not end within ``timeout`` seconds
        """
        from torchx.testing.processes import eventually

        eventually(lambda: self.status(handle)["state"] in _FINAL, timeout, 0.3, f"{handle} to end")
        return self.status(handle)

    def gone(self) -> None:
        """The machine is lost: its HOME moves away, and no process of it may be left running
        (a process a cluster's daemon started carries the submitter's environment, HOME
        included, on Slurm and LSF: it is the cluster's, not the client's)."""
        left = [pid for pid in processes_with_home(self.home) if not started_by_a_backend(pid)]
        if left:
            raise AssertionError(f"processes of the torn-down client still run: {left}")
        self.home.rename(self.home.with_name(self.home.name + "-gone"))


def processes_with_home(home: Path) -> list[int]:
    """Pids of the processes whose environment has ``HOME=home``."""
    want = f"HOME={home}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if want in environ:
            found.append(int(pid))
    return found


#: daemons that start a job's processes on a cluster node (``comm`` names, 15 characters at most)
BACKEND_DAEMONS = frozenset({"slurmstepd", "slurmd", "sbatchd", "res", "containerd-shim", "raylet", "kubelet"})


def started_by_a_backend(pid: int) -> bool:
    """True if one of ``pid``'s ancestors is a cluster daemon (:data:`BACKEND_DAEMONS`)."""
    seen = 0
    while pid > 1 and seen < 64:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        if comm in BACKEND_DAEMONS:
            return True
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        seen += 1
    return False
