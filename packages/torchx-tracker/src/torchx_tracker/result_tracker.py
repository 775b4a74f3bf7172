"""``torchx.runtime.tracking``: small results an app hands back (``ResultTracker``).

A job is a program, so it cannot ``return`` a value to whoever launched it. A result
tracker is a shared key -> results store both sides open with the same base: the app
writes ``tracker[trial] = {"loss": 0.1}``, the launcher (an HPO loop, say) reads
``tracker[trial]`` after the job ended. Results are flat ``str -> number or str`` maps,
not model weights. ``utils.booth`` writes its results in :class:`FsspecResultTracker`'s
layout.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping

KeyType = str | int
ResultType = int | float | str


class ResultTracker(abc.ABC):
    """A key -> results store; ``tracker[key] = {...}`` and ``tracker[key]`` are ``put``/``get``."""

    def __getitem__(self, key: KeyType) -> dict[str, ResultType]:
        return self.get(key)

    def __setitem__(self, key: KeyType, results: Mapping[str, ResultType]) -> None:
        self.put(key, **results)

    @abc.abstractmethod
    def put(self, key: KeyType, **results: ResultType) -> None:
        """Records ``results`` under ``key`` (replacing what was there)."""

    @abc.abstractmethod
    def get(self, key: KeyType) -> dict[str, ResultType]:
        """The results recorded under ``key`` (empty if none)."""


class FsspecResultTracker(ResultTracker):
    """Keeps each key's results as JSON in ``{tracker_base}/{key}.json`` (a local path or any
    fsspec URL, e.g. ``s3://bucket/hpo``).

    Args:
        tracker_base: the directory (or URL) results go under
    """

    def __init__(self, tracker_base: str) -> None:
        self.tracker_base = tracker_base.rstrip("/")

    def _path(self, key: KeyType) -> str:
        return f"{self.tracker_base}/{key}.json"

    def put(self, key: KeyType, **results: ResultType) -> None:
        import fsspec

        with fsspec.open(self._path(key), "w", auto_mkdir=True) as f:
            json.dump(results, f)

    def get(self, key: KeyType) -> dict[str, ResultType]:
        import fsspec

        try:
            with fsspec.open(self._path(key), "r") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        return dict(data)


__all__ = ["FsspecResultTracker", "KeyType", "ResultTracker", "ResultType"]
