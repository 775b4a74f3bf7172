"""Registers the ``managed`` scheduler (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """``managed``: runs an app on other schedulers until it succeeds (restarts, recoveries, failover)."""
    yield SchedulerPlugin(
        "managed",
        "torchx_managed.scheduler:create_scheduler",
        "keeps an app running on other schedulers (targets) until it succeeds: restarts, recoveries, failover",
    )
