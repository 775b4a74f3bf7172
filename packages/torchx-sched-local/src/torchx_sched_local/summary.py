"""The ``SUCCESS`` file: TorchX 0.7's summary of an app that ended, in its ``log_dir``.

TorchX's local scheduler drops it in the app's log directory once the app's log files are
closed, whatever the final state (the name says the logs are complete, not that the app
succeeded). The supervisor writes it for a job run with ``-cfg log_dir=...``, after the
replicas' logs are sealed and before the final state is stored, so whoever sees the job
ended finds it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: its name in the app's log directory
SUMMARY_FILE = "SUCCESS"


def summary(app_id: str, log_root: str, final_state: str, replicas: Iterable[Any]) -> dict[str, Any]:
    """TorchX's content: the app, its log dir, final state, and per role each replica's id, pid,
    exit code and log files (``replicas``: the supervisor's, with ``spec``/``pid``/``exit_code``)."""
    roles: dict[str, list[dict[str, Any]]] = {}
    for r in replicas:
        log_dir = r.spec["log_dir"]
        roles.setdefault(r.spec["role"], []).append(
            {
                "replica_id": r.spec["replica_id"],
                "pid": r.pid,
                "exitcode": r.exit_code,
                "stdout": os.path.join(log_dir, "stdout.log"),
                "stderr": os.path.join(log_dir, "stderr.log"),
                "error_file": r.spec["env"].get("TORCHELASTIC_ERROR_FILE", os.path.join(log_dir, "error.json")),
            }
        )
    return {
        "app_id": app_id,
        "log_dir": log_root,
        "final_state": final_state,
        "last_updated": time.time(),
        "roles": roles,
    }


def write_summary(root_fd: int, data: dict[str, Any]) -> None:
    """Writes ``data`` as the ``SUCCESS`` file of the log root held open as ``root_fd``
    (mode 0600, never through a symlink a replica planted).

    Raises:
        OSError: it cannot be written
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(SUMMARY_FILE, flags, 0o600, dir_fd=root_fd)
    try:
        payload = json.dumps(data, indent=2).encode()
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
