"""Registers the ``lsf`` scheduler; imports nothing but the plugin records."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The ``lsf`` scheduler."""
    yield SchedulerPlugin(
        "lsf",
        "torchx_sched_lsf.scheduler:create_scheduler",
        "IBM Spectrum LSF / OpenLava: one bsub job per app, bjobs/bkill",
    )
