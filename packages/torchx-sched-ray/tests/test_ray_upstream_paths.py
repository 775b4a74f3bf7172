"""``torchx.schedulers.ray_scheduler`` is this package's."""

from __future__ import annotations


def test_upstream_path() -> None:
    import torchx_sched_ray.compat_ray as compat
    from torchx.schedulers.ray_scheduler import RayOpts, RayScheduler, create_scheduler
    from torchx_sched_ray import opts, scheduler

    assert RayScheduler is scheduler.RayScheduler
    # every option, and TorchX 0.7's ray name of the address
    assert set(RayOpts.__annotations__) == {k for k, _ in opts.RayOpts.as_runopts()} | {"dashboard_address"}
    assert isinstance(create_scheduler("s"), scheduler.RayScheduler)
    import torchx.schedulers.ray_scheduler as legacy

    assert legacy is compat
