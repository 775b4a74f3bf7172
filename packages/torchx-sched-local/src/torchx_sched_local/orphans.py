"""What a job whose supervisor is gone left running, and stopping it: one way for its
watchdog, ``status`` (which names them) and ``cancel`` (which kills them).

The job's processes are its recorded replicas (``state.json``: pid and start time, so a
reused pid is never taken for one), the members of their sessions, and any process that
carries the job's environment (``PET_LOG_DIR=<log root>/``): a replica started but not
recorded yet, or what left its replica's session. Standard library only (the watchdog
imports it).
"""

from __future__ import annotations

import os
import signal

from torchx_sched_local.sessions import kill_all, scan, start_time, wait_gone, wait_groups_gone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def survivors(st: dict[str, Any], log_root: str | None) -> list[int]:
    """Live processes of the job whose state is ``st`` and whose replicas log under
    ``log_root`` (None: unknown, so found by session only)."""
    recorded = {
        rs["pid"]: rs["start_time"] for rs in st.get("replicas") or [] if rs.get("pid") and rs.get("start_time")
    }
    needle = f"PET_LOG_DIR={log_root}{os.sep}".encode() if isinstance(log_root, str) else b""
    members, escaped = scan(recorded, needle)
    return sorted({*members, *escaped})


def kill(st: dict[str, Any], log_root: str | None, timeout: float = 5.0) -> tuple[list[int], list[int]]:
    """SIGKILLs every process of the job (each recorded replica's process group, then every
    :func:`survivors`) and waits up to ``timeout`` s for them to go. Returns the pids killed
    and those still alive after the wait (another user's, or stuck in the kernel)."""
    groups = []
    for rs in st.get("replicas") or []:
        pid, started = rs.get("pid"), rs.get("start_time")
        if pid and started is not None and start_time(pid) == started:
            try:
                os.killpg(pid, signal.SIGKILL)
                groups.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
    found = survivors(st, log_root)  # what they started (even if the replica itself is gone)
    kill_all(found, signal.SIGKILL)
    wait_groups_gone(groups, timeout)
    left = wait_gone(survivors(st, log_root), timeout)
    return sorted({*groups, *found}), left
