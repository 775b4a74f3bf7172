"""``torchx.schedulers.lsf_scheduler`` is this package's."""

from __future__ import annotations


def test_upstream_path() -> None:
    import torchx_sched_lsf.compat_lsf as compat
    from torchx.schedulers.lsf_scheduler import LsfOpts, LsfScheduler, create_scheduler
    from torchx_sched_lsf import opts, scheduler

    assert LsfScheduler is scheduler.LsfScheduler
    # every option, and TorchX 0.7's lsf names of two of them
    assert set(LsfOpts.__annotations__) == {k for k, _ in opts.LsfOpts.as_runopts()} | {"jobdir", "lsf_queue"}
    assert isinstance(create_scheduler("s"), scheduler.LsfScheduler)
    import torchx.schedulers.lsf_scheduler as legacy

    assert legacy is compat
