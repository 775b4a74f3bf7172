"""Experiment tracking: the :class:`~torchx.tracker.api.TrackerBase` interface and the
in-job :class:`~torchx.tracker.api.AppRun` helper. Backends come from plugins."""

from torchx.tracker.api import (
    AppRun,
    AppRunTrackableSource,
    Lineage,
    TrackerArtifact,
    TrackerBase,
    TrackerSource,
    app_run_from_env,
    build_trackers,
    trackers_from_environ,
)

__all__ = [
    "AppRun",
    "AppRunTrackableSource",
    "Lineage",
    "TrackerArtifact",
    "TrackerBase",
    "TrackerSource",
    "app_run_from_env",
    "build_trackers",
    "trackers_from_environ",
]
