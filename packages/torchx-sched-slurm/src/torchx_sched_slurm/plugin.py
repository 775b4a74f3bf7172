"""Registers the ``slurm`` scheduler; imports nothing but the plugin records."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The ``slurm`` scheduler."""
    yield SchedulerPlugin(
        "slurm",
        "torchx_sched_slurm.scheduler:create_scheduler",
        "Slurm: heterogeneous sbatch jobs (one component per replica), squeue/sacct/scancel",
    )
