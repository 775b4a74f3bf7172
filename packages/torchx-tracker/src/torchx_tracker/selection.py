"""Which tracker a command outside a job reads: flags, else ``.torchxconfig``, else the environment.

``.torchxconfig`` names trackers as the runner reads them for jobs::

    [torchx:tracker]
    fsspec =

    [tracker:fsspec]
    config = /data/tracker
"""

from __future__ import annotations

from torchx.tracker.api import TrackerBase, tracker_configs_from_environ

NO_TRACKER_HELP = (
    "no tracker configured: add `[torchx:tracker]` with a line `fsspec =` and `[tracker:fsspec]` with"
    " `config = /path/to/tracker/dir` to .torchxconfig, or pass --tracker fsspec --config /path/to/tracker/dir"
)


def configured_trackers() -> dict[str, str | None]:
    """``{name: config}`` of the trackers ``.torchxconfig`` names (first file, first key first)."""
    from torchx.runner import config

    names = config.load_sections("torchx").get("tracker", {})
    return {name: config.get_config("tracker", name, "config") for name in names}


def environ_trackers() -> dict[str, str | None]:
    """``{name: config}`` from ``TORCHX_TRACKERS`` and ``TORCHX_TRACKER_<NAME>_CONFIG`` (as a job sees them)."""
    return tracker_configs_from_environ()


def create_tracker(name: str, config: str | None) -> TrackerBase:
    """Creates tracker ``name`` (an installed tracker, or ``module:factory``); errors propagate.

    Raises:
        ValueError: no installed plugin provides ``name``
    """
    from torchx.plugins import Ref, get_registry

    registered = get_registry().trackers
    record = registered.get(name)
    if record is None and ":" not in name:
        installed = ", ".join(sorted(registered)) or "none"
        raise ValueError(f"unknown tracker {name!r}; installed: {installed} (or give module:factory)")
    tracker = Ref(record.factory if record else name)(config)
    if not isinstance(tracker, TrackerBase):
        raise TypeError(f"tracker {name!r} factory returned {type(tracker).__name__}, not a TrackerBase")
    return tracker


def select_tracker(name: str | None = None, config: str | None = None) -> tuple[str, TrackerBase]:
    """``(name, tracker)``: ``name``/``config`` if given, else the first configured tracker.

    With ``name`` but no ``config``, the config comes from ``[tracker:<name>]`` or the environment.

    Raises:
        ValueError: nothing is configured, or ``config`` is given without ``name``
    """
    if name:
        if config is None:
            config = configured_trackers().get(name) or environ_trackers().get(name)
        return name, create_tracker(name, config)
    if config is not None:
        raise ValueError("--config needs --tracker NAME (e.g. --tracker fsspec --config /path/to/tracker/dir)")
    trackers = configured_trackers() or environ_trackers()
    if not trackers:
        raise ValueError(NO_TRACKER_HELP)
    first = next(iter(trackers))
    return first, create_tracker(first, trackers[first])
