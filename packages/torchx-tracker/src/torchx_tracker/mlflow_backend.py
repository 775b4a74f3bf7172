"""The ``mlflow`` tracker (``pip install 'torchx-tracker[mlflow]'``): torchx runs as MLflow runs.

``config`` is an MLflow tracking URI, optionally followed by ``;experiment=NAME``
(default experiment ``torchx``)::

    [tracker:mlflow]
    config = file:///data/mlruns;experiment=resnet

Each torchx run id maps to the MLflow runs tagged ``torchx.run_key = sha256(run id)``
(named after the run id in the MLflow UI). Everything is recorded as tags, which are
mutable, so re-recording a key replaces it (MLflow params cannot change):

* metadata ``k=v``: tag ``torchx.metadata.k`` = JSON of ``v``;
* artifact ``name``: tag ``torchx.artifact.<digest>`` = JSON ``{"name", "path", "metadata"}``
  (artifacts are references to paths; no file is uploaded);
* source: tag ``torchx.source.<digest>`` = JSON ``{"source_run_id", "artifact_name"}``.

Replicas that start at once may each create an MLflow run for the same torchx run;
reads merge every MLflow run carrying the run's key (oldest first), so nothing is lost.

MLflow 3 refuses ``file://`` stores unless ``MLFLOW_ALLOW_FILE_STORE=true`` is set (in the
job's env too); database and server URIs need nothing extra.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping

from torchx.tracker.api import Lineage, TrackerArtifact, TrackerBase, TrackerSource

from torchx_tracker.lineage import build_lineage

try:
    from mlflow.entities import Run, RunTag
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"the mlflow tracker needs MLflow ({e}): pip install 'torchx-tracker[mlflow]' (or mlflow-skinny)"
    ) from None

DEFAULT_EXPERIMENT = "torchx"
TAG_RUN_ID = "torchx.run_id"
TAG_RUN_KEY = "torchx.run_key"
_METADATA = "torchx.metadata."
_ARTIFACT = "torchx.artifact."
_SOURCE = "torchx.source."
_MAX_TAG_VALUE = 8000


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _dump(value: object, what: str) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{what} is not JSON-serializable ({e}); record str, numbers, bools, lists and dicts"
        ) from None
    if len(text) > _MAX_TAG_VALUE:
        raise ValueError(f"{what} is {len(text)} characters as JSON; MLflow tags hold at most {_MAX_TAG_VALUE}")
    return text


class MlflowTracker(TrackerBase):
    """Records torchx runs in the MLflow experiment ``experiment`` at ``tracking_uri``."""

    def __init__(self, tracking_uri: str, experiment: str = DEFAULT_EXPERIMENT) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self._experiment_id: str | None = None
        self._write_runs: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"MlflowTracker({self.tracking_uri}, experiment={self.experiment})"

    # ------------------------------------------------------------------ runs
    def _experiment(self) -> str | None:
        """The experiment writes go to (made if there is none)."""
        if self._experiment_id is None:
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                try:
                    self._experiment_id = self.client.create_experiment(self.experiment)
                except MlflowException:  # another replica created it first
                    found = self.client.get_experiment_by_name(self.experiment)
            if found is not None:
                self._experiment_id = found.experiment_id
        return self._experiment_id

    def _experiment_ids(self) -> list[str]:
        """Every experiment named :attr:`experiment`: MLflow's file store checks the name, then
        creates, so replicas that make it at once can make one each (their runs are read from all)."""
        if "'" in self.experiment:  # not one that a filter string can quote: the one MLflow finds
            found = self.client.get_experiment_by_name(self.experiment)
            return [] if found is None else [found.experiment_id]
        named = self.client.search_experiments(filter_string=f"name = '{self.experiment}'", max_results=1000)
        return [e.experiment_id for e in named]

    def _search(self, filter_string: str = "") -> Iterator[Run]:
        experiment_ids = self._experiment_ids()
        if not experiment_ids:
            return
        token = None
        while True:
            page = self.client.search_runs(
                experiment_ids,
                filter_string,
                max_results=1000,
                order_by=["attributes.start_time ASC"],
                page_token=token,
            )
            yield from page
            token = page.token
            if not token:
                return

    def _runs(self, run_id: str) -> list[Run]:
        """The MLflow runs of ``run_id``, oldest first."""
        return list(self._search(f"tags.`{TAG_RUN_KEY}` = '{_digest(run_id)}'"))

    def _write_run(self, run_id: str) -> str:
        """The MLflow run id writes of ``run_id`` go to (the oldest; created if there is none)."""
        cached = self._write_runs.get(run_id)
        if cached is None:
            if not run_id:
                raise ValueError("a run id must not be empty")
            runs = self._runs(run_id)
            if runs:
                cached = runs[0].info.run_id
            else:
                experiment_id = self._experiment()
                assert experiment_id is not None
                tags = {TAG_RUN_ID: run_id, TAG_RUN_KEY: _digest(run_id)}
                cached = self.client.create_run(experiment_id, tags=tags, run_name=run_id[:250]).info.run_id
            self._write_runs[run_id] = cached
        return cached

    def _set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        self.client.log_batch(self._write_run(run_id), tags=[RunTag(k, v) for k, v in tags.items()])

    def _tags(self, run_id: str, prefix: str) -> dict[str, str]:
        merged: dict[str, str] = {}
        for run in self._runs(run_id):
            merged.update({k: v for k, v in run.data.tags.items() if k.startswith(prefix)})
        return merged

    # ------------------------------------------------------------------ TrackerBase
    def add_artifact(self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None) -> None:
        """Records artifact ``name`` at ``path`` (a reference; nothing is uploaded)."""
        if not name or not isinstance(name, str):
            raise ValueError(f"run {run_id}: an artifact needs a non-empty name, got {name!r}")
        record = {"name": name, "path": path, "metadata": None if metadata is None else dict(metadata)}
        self._set_tags(run_id, {_ARTIFACT + _digest(name): _dump(record, f"run {run_id}: artifact {name!r}")})

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """Artifacts by name."""
        found: dict[str, TrackerArtifact] = {}
        for value in self._tags(run_id, _ARTIFACT).values():
            record = json.loads(value)
            found[record["name"]] = TrackerArtifact(record["name"], record["path"], record.get("metadata"))
        return found

    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Records metadata as JSON tags (later values of a key win)."""
        if kwargs:
            self._set_tags(
                run_id, {_METADATA + k: _dump(v, f"run {run_id}: metadata {k!r}") for k, v in kwargs.items()}
            )

    def metadata(self, run_id: str) -> Mapping[str, object]:
        """The run's metadata."""
        return {k[len(_METADATA) :]: json.loads(v) for k, v in self._tags(run_id, _METADATA).items()}

    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` descends from ``source_id`` (idempotent)."""
        if not source_id or not isinstance(source_id, str):
            raise ValueError(f"run {run_id}: a source needs a non-empty run id, got {source_id!r}")
        record = {"source_run_id": source_id, "artifact_name": artifact_name}
        key = _SOURCE + _digest(f"{source_id}\0{artifact_name or ''}")
        self._set_tags(run_id, {key: _dump(record, f"run {run_id}: source")})

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """Sources sorted by source run id (only through ``artifact_name`` if given)."""
        found = [TrackerSource(**json.loads(v)) for v in self._tags(run_id, _SOURCE).values()]
        found = [s for s in found if artifact_name is None or s.artifact_name == artifact_name]
        return sorted(found, key=lambda s: (s.source_run_id, s.artifact_name or ""))

    def lineage(self, run_id: str) -> Lineage:
        """``run_id``, its sources and their lineage, recursively."""
        return build_lineage(run_id, self.sources)

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Every torchx run id in the experiment, sorted; ``parent_run_id=X`` keeps X's children."""
        unknown = sorted(set(kwargs) - {"parent_run_id"})
        if unknown:
            raise ValueError(f"unknown run filter(s) {', '.join(unknown)}; supported: parent_run_id")
        parent = kwargs.get("parent_run_id")
        found: set[str] = set()
        for run in self._search():
            tags = run.data.tags
            rid = tags.get(TAG_RUN_ID)
            if rid is None:
                continue
            if parent and not any(
                json.loads(v).get("source_run_id") == parent for k, v in tags.items() if k.startswith(_SOURCE)
            ):
                continue
            found.add(rid)
        return sorted(found)


def create(config: str | None) -> MlflowTracker:
    """The ``mlflow`` tracker factory: ``config`` is ``TRACKING_URI[;experiment=NAME]``.

    Raises:
        ValueError: no tracking URI, or an unknown option
    """
    uri, *options = [part.strip() for part in (config or "").split(";")]
    if not uri:
        raise ValueError(
            "the mlflow tracker needs a tracking URI: set `config = file:///path/mlruns` (optionally"
            " `;experiment=NAME`) in the [tracker:mlflow] section of .torchxconfig (or TORCHX_TRACKER_MLFLOW_CONFIG)"
        )
    experiment = DEFAULT_EXPERIMENT
    for option in filter(None, options):
        key, sep, value = option.partition("=")
        if key.strip() != "experiment" or not sep or not value.strip():
            raise ValueError(f"unknown mlflow tracker option {option!r} in {config!r}; supported: experiment=NAME")
        experiment = value.strip()
    return MlflowTracker(uri, experiment)
