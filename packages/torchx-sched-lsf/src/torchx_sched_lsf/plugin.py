"""Registers the ``lsf`` scheduler; imports nothing but the plugin records."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import LegacyModule, SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The ``lsf`` scheduler."""
    yield SchedulerPlugin(
        "lsf",
        "torchx_sched_lsf.scheduler:create_scheduler",
        "IBM Spectrum LSF / OpenLava: one bsub job per app, bjobs/bkill",
    )


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module path of the LSF scheduler."""
    yield LegacyModule("torchx.schedulers.lsf_scheduler", "torchx_sched_lsf.compat_lsf")
