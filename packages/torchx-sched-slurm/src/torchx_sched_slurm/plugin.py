"""Registers the ``slurm`` scheduler; imports nothing but the registration types."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import LegacyModule, SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The ``slurm`` scheduler."""
    yield SchedulerPlugin(
        "slurm",
        "torchx_sched_slurm.scheduler:create_scheduler",
        "Slurm: heterogeneous sbatch jobs (one component per replica), squeue/sacct/scancel",
    )


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module paths of the Slurm scheduler and of its directory workspace."""
    yield LegacyModule("torchx.schedulers.slurm_scheduler", "torchx_sched_slurm.compat_slurm")
    yield LegacyModule("torchx.workspace.dir_workspace", "torchx_sched_slurm.compat_dir_workspace")
