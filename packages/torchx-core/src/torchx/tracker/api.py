"""Tracker interfaces: where jobs record artifacts, metadata and their lineage.

A launched job finds its trackers in its environment (``TORCHX_TRACKERS``,
``TORCHX_TRACKER_<NAME>_CONFIG``, ``TORCHX_JOB_ID``, ``TORCHX_PARENT_RUN_ID``, set by the
runner) and records through :class:`AppRun`::

    run = AppRun.run_from_env()
    run.add_metadata(lr=0.01)
    run.add_artifact("model", "s3://bucket/model.pt")
"""

from __future__ import annotations

import abc
import os
from collections.abc import Iterable, Mapping

from torchx.tracker.env import (
    ENV_TORCHX_JOB_ID,
    ENV_TORCHX_PARENT_RUN_ID,
    ENV_TORCHX_TRACKERS,
    tracker_config_env_var_name,
    tracker_config_env_var_names,
)
from torchx.util.record import field, record

__all__ = [
    "ENV_TORCHX_JOB_ID",
    "ENV_TORCHX_PARENT_RUN_ID",
    "ENV_TORCHX_TRACKERS",
    "AppRun",
    "AppRunTrackableSource",
    "Lineage",
    "TrackerArtifact",
    "TrackerBase",
    "TrackerSource",
    "app_run_from_env",
    "build_trackers",
    "tracker_config_env_var_name",
    "tracker_configs_from_environ",
    "tracker_names_from_environ",
    "trackers_from_environ",
]


@record
class TrackerArtifact:
    """An artifact a run recorded: a name, where it is, and metadata about it."""

    name: str
    path: str
    metadata: Mapping[str, object] | None = None


@record
class TrackerSource:
    """A run this run descends from, optionally through one of its artifacts."""

    source_run_id: str
    artifact_name: str | None = None


@record
class Lineage:
    """A run and the runs it descends from (recursively).

    Every field has a default, so ``Lineage()`` works as TorchX's (field-less) ``Lineage`` does.
    """

    run_id: str = ""
    sources: list[TrackerSource] = field(default_factory=list)
    parents: list[Lineage] = field(default_factory=list)


class TrackerBase(abc.ABC):
    """A tracker backend: stores artifacts, metadata and sources per run id."""

    @abc.abstractmethod
    def add_artifact(self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None) -> None:
        """Records artifact ``name`` at ``path`` for ``run_id``."""

    @abc.abstractmethod
    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """Artifacts of ``run_id`` by name."""

    @abc.abstractmethod
    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Records metadata for ``run_id`` (merged with what is there)."""

    @abc.abstractmethod
    def metadata(self, run_id: str) -> Mapping[str, object]:
        """Metadata of ``run_id``."""

    @abc.abstractmethod
    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` descends from ``source_id`` (through ``artifact_name``)."""

    @abc.abstractmethod
    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """The runs ``run_id`` descends from (only through ``artifact_name`` if given)."""

    @abc.abstractmethod
    def lineage(self, run_id: str) -> Lineage:
        """``run_id`` and its ancestors."""

    @abc.abstractmethod
    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Known run ids; ``parent_run_id=X`` limits them to X's children."""


class _RunFromEnv:
    """``AppRun.run_from_env``: reads the environment at each call, so a process that runs
    several jobs, or changes ``TORCHX_JOB_ID``, gets the current run. TorchX caches the result
    (``functools.lru_cache``); its ``cache_clear()`` is here too and, with no cache, does nothing."""

    def __call__(self) -> AppRun:
        """The run of the job this process belongs to, from the environment the runner set.

        When the job was launched with a parent run id, the parent is recorded as a source.
        Outside a torchx job, the run id is ``<UNDEFINED>`` and no backend records.
        """
        run_id = os.environ.get(ENV_TORCHX_JOB_ID, "<UNDEFINED>")
        run = AppRun(id=run_id, backends=list(trackers_from_environ()))
        parent_run_id = os.environ.get(ENV_TORCHX_PARENT_RUN_ID)
        if parent_run_id and ENV_TORCHX_JOB_ID in os.environ:
            run.add_source(parent_run_id)  # every replica does this: backends make it idempotent
        return run

    def cache_clear(self) -> None:
        """TorchX's way to make the next call read the environment again; every call does."""


@record
class AppRunTrackableSource:
    """A source as seen from a job: the parent run and the artifact it came through."""

    parent: AppRun
    artifact_name: str | None


@record
class AppRun:
    """The job's own run, recording to every configured tracker backend."""

    id: str
    backends: Iterable[TrackerBase]

    #: ``AppRun.run_from_env()``: the run of the job this process belongs to (see :class:`_RunFromEnv`)
    run_from_env = _RunFromEnv()

    def add_metadata(self, **kwargs: object) -> None:
        """Records metadata in every backend."""
        for backend in self.backends:
            backend.add_metadata(self.id, **kwargs)

    def add_artifact(self, name: str, path: str, metadata: Mapping[str, object] | None = None) -> None:
        """Records an artifact in every backend."""
        for backend in self.backends:
            backend.add_artifact(self.id, name, path, metadata)

    def job_id(self) -> str:
        """This run's id (the app handle with the scheduler's app id)."""
        return self.id

    def add_source(self, source_id: str, artifact_name: str | None = None) -> None:
        """Records a parent run in every backend."""
        for backend in self.backends:
            backend.add_source(self.id, source_id, artifact_name)

    def sources(self) -> Iterable[AppRunTrackableSource]:
        """Parent runs, from the first backend."""
        for backend in self.backends:
            return [
                AppRunTrackableSource(AppRun(s.source_run_id, self.backends), s.artifact_name)
                for s in backend.sources(self.id)
            ]
        return []


def app_run_from_env() -> AppRun:
    """Same as :meth:`AppRun.run_from_env`."""
    return AppRun.run_from_env()


def _warn(msg: str, *args: object) -> None:
    import logging

    logging.getLogger(__name__).warning(msg, *args)


def build_trackers(entrypoint_and_config: Mapping[str, str | None]) -> Iterable[TrackerBase]:
    """Creates tracker backends from ``{name or "module:factory": config}``.

    A name is looked up among installed tracker plugins, then imported as ``module:attr``.
    A tracker that cannot be created is logged and skipped.
    """
    from torchx.plugins import Ref, get_registry

    registered = get_registry().trackers
    trackers = []
    for name, config in entrypoint_and_config.items():
        record = registered.get(name)
        path = record.factory if record else name
        if record is None and ":" not in name:
            from torchx.util import distributions
            from torchx.util.distributions import pip_install

            _warn("unknown tracker %r: no installed plugin provides it (%s?)", name, pip_install(distributions.TRACKER))
            continue
        try:
            trackers.append(Ref(path)(config))
        except Exception as e:
            _warn("cannot create tracker %r: %s", name, e)
    return trackers


def trackers_from_environ() -> Iterable[TrackerBase]:
    """The trackers named in ``TORCHX_TRACKERS`` with configs from ``TORCHX_TRACKER_<NAME>_CONFIG``."""
    return build_trackers(tracker_configs_from_environ())


def tracker_configs_from_environ() -> dict[str, str | None]:
    """``{name: config}`` of the trackers in ``TORCHX_TRACKERS``, each config from
    ``TORCHX_TRACKER_<NAME>_CONFIG`` (either spelling, see :func:`tracker_config_env_var_names`)."""
    return {
        name: next((os.environ[v] for v in tracker_config_env_var_names(name) if v in os.environ), None)
        for name in tracker_names_from_environ()
    }


def tracker_names_from_environ() -> list[str]:
    """The tracker names in ``TORCHX_TRACKERS`` (comma-separated)."""
    return [n.strip() for n in os.environ.get(ENV_TORCHX_TRACKERS, "").split(",") if n.strip()]
