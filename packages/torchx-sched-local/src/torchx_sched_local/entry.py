"""How a job's supervisor and its watchdog are run: their command line (the ``_supervise.py``
entry script under ``python -I -S``), the descriptor on which the supervisor holds the job's
lock, and the job-directory file its errors go to.

The launcher, the supervisor re-executing itself (:mod:`.handover`) and the watchdog all build
the same command line from here. Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import os
import sys

#: the fd on which the supervisor receives the job's (held) lock
LOCK_FD = 3
#: the file in the job directory the supervisor's stderr is appended to
SUPERVISOR_LOG = "supervisor.log"
_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_supervise.py")


def supervisor_argv(job_dir: str, role: str = "") -> list[str]:
    """The supervisor's command line: the interpreter, its entry script and the job directory
    (``role="--watchdog"``: its watchdog's)."""
    return [sys.executable, "-I", "-S", _ENTRY, *([role] if role else []), job_dir]
