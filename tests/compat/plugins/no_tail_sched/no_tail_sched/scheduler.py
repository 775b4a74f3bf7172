"""``local_cwd`` with ``capabilities.log_tail`` off: a backend whose logs can be read but not
followed while the job runs (as many batch systems' are)."""

from __future__ import annotations

import dataclasses
from typing import Any

from torchx_sched_local.local_scheduler import LocalScheduler


class NoTailScheduler(LocalScheduler):
    """Runs replicas as ``local_cwd`` does; declares that it cannot follow a running log."""

    capabilities = dataclasses.replace(LocalScheduler.capabilities, log_tail=False)

    def __init__(self, session_name: str) -> None:
        super().__init__(session_name)
        self.backend = "local_no_tail"


def create_scheduler(session_name: str, **kwargs: Any) -> NoTailScheduler:
    """The ``local_no_tail`` scheduler (keyword arguments meant for other schedulers are ignored)."""
    return NoTailScheduler(session_name)
