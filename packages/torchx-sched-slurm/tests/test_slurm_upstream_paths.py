"""``torchx.schedulers.slurm_scheduler`` and ``torchx.workspace.dir_workspace`` are this package's."""

from __future__ import annotations


def test_upstream_paths() -> None:
    from torchx.schedulers.slurm_scheduler import SlurmOpts, SlurmScheduler, create_scheduler
    from torchx.workspace.dir_workspace import DirWorkspaceMixin
    from torchx.workspace.job_dir import JobDirWorkspaceMixin
    from torchx_sched_slurm import opts, scheduler

    assert SlurmScheduler is scheduler.SlurmScheduler
    assert set(SlurmOpts.__annotations__) == {k for k, _ in opts.SlurmOpts.as_runopts()}
    assert isinstance(create_scheduler("s"), scheduler.SlurmScheduler)
    assert DirWorkspaceMixin is JobDirWorkspaceMixin
