"""Registers the ``ray`` scheduler; imports nothing but the plugin records (never ray)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import LegacyModule, SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The ``ray`` scheduler."""
    yield SchedulerPlugin(
        "ray",
        "torchx_sched_ray.scheduler:create_scheduler",
        "Ray: a Ray job per app (Jobs API), one gang-placed actor per replica",
    )


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module path of the Ray scheduler."""
    yield LegacyModule("torchx.schedulers.ray_scheduler", "torchx_sched_ray.compat_ray")
