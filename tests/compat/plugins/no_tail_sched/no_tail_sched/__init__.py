"""Registers ``local_no_tail``: local processes, on a scheduler that cannot follow logs."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """``local_no_tail``: see :mod:`no_tail_sched.scheduler`."""
    yield SchedulerPlugin(
        "local_no_tail",
        "no_tail_sched.scheduler:create_scheduler",
        "local processes; logs readable only once a job ended (no --tail)",
    )
