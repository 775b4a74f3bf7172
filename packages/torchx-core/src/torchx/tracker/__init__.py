"""Experiment tracking: the :class:`~torchx.tracker.api.TrackerBase` interface and the
in-job :class:`~torchx.tracker.api.AppRun` helper. Backends come from plugins.

The names below are loaded from :mod:`torchx.tracker.api` on first use, so importing
``torchx.tracker.env`` (what the runner needs) stays cheap.
"""

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


def __getattr__(name: str) -> object:
    if name in __all__:
        from torchx.tracker import api

        return getattr(api, name)
    raise AttributeError(f"module 'torchx.tracker' has no attribute {name!r}")
