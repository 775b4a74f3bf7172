"""Reads the metric each trial recorded through the tracker (``AppRun.add_metadata(loss=...)``).

A trial's tracker run id is its app handle (``TORCHX_JOB_ID``), so the metric of a trial is
``tracker.metadata(handle)[name]`` in the first tracker the sweep recorded at submission (the one
``.torchxconfig``'s ``[torchx:tracker]`` or ``TORCHX_TRACKERS`` named where it was submitted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchx.tracker.api import TrackerBase, build_trackers, trackers_from_environ

#: what ``--metric`` says when no tracker is configured (one line: what is wrong, how to fix it)
NO_TRACKER = (
    "no tracker is configured, so --metric {metric} has no values to show; configure one in"
    " .torchxconfig: '[torchx:tracker]' with 'fsspec =' and '[tracker:fsspec]' with 'config = /path/to/runs'"
    " (pip install torchx-tracker), as in the README's Sweeps section"
)


def configured_tracker() -> TrackerBase | None:
    """The tracker trials record to, as this process's ``.torchxconfig`` (or environment) names it."""
    from torchx.runner import config

    names = config.load_sections("torchx").get("tracker", {})
    trackers = list(build_trackers({n: config.get_config("tracker", n, "config") for n in names}))
    if not trackers:
        trackers = list(trackers_from_environ())
    return trackers[0] if trackers else None


def recorded_trackers(spec: Mapping[str, Any]) -> list[TrackerBase]:
    """The trackers a sweep's trials record to, as the sweep recorded them when it was submitted
    (``spec["trackers"]``: name -> config), whatever directory the reader runs in; for a sweep
    recorded without them, this process's :func:`configured_tracker`."""
    recorded = spec.get("trackers")
    if isinstance(recorded, dict) and recorded:
        return list(build_trackers({str(k): None if v is None else str(v) for k, v in recorded.items()}))
    tracker = configured_tracker()
    return [] if tracker is None else [tracker]


def read_metric(handles: Iterable[str | None], name: str, tracker: TrackerBase | None) -> dict[str, object]:
    """``{handle: value}`` of the trials that recorded metric ``name`` (numbers as numbers)."""
    if tracker is None:
        return {}
    found: dict[str, object] = {}
    for handle in handles:
        if handle is None:
            continue
        value = tracker.metadata(handle).get(name)
        if value is None:
            continue
        try:
            found[handle] = float(value) if isinstance(value, str) else value
        except ValueError:
            found[handle] = value
    return found


def best_index(values: dict[int, object], minimize: bool) -> int | None:
    """The index with the best numeric value (lowest if ``minimize``), None if there is none."""
    numeric = {i: float(v) for i, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if not numeric:
        return None
    return (min if minimize else max)(numeric, key=lambda i: numeric[i])
