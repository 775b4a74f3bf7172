"""The ``fsspec`` tracker: runs recorded as small JSON files under any fsspec URL.

Layout under the root (``<run>`` is :func:`torchx_tracker.runkeys.encode` of the run id)::

    runs/<run>/metadata/<time_ns>-<random>.json    {"metadata": {...}}   one file per call
    runs/<run>/artifacts/<time_ns>-<random>.json   {"name", "path", "metadata"}
    runs/<run>/sources/<digest>.json               {"source_run_id", "artifact_name"}
    runs/<run>/run_id.json                         {"run_id"}  (only for hashed keys)
    children/<parent run>/<run>.json               {"run_id"}  (index for run_ids(parent_run_id=))

Every write creates or atomically replaces one file and nothing is ever appended to, so
any number of replicas (on any hosts) can record into the same run at once. Reads merge:
metadata and artifacts are applied in file-name order (the writer's clock, then a random
tie-breaker), so the latest write of a key wins. Sources are keyed by content, so
recording the same source again (every replica does) changes nothing.

On local filesystems a file is written under a hidden temporary name and renamed into
place; on object stores (and ``memory://``) a single put is already atomic. Readers skip
hidden files and warn about (and skip) files they cannot parse.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem
from torchx.tracker.api import Lineage, TrackerArtifact, TrackerBase, TrackerSource

from torchx_tracker import runkeys
from torchx_tracker.fsspec_config import parse_settings
from torchx_tracker.lineage import build_lineage

logger: logging.Logger = logging.getLogger(__name__)

_RUN_FILTERS = ("parent_run_id",)


def generate_filename() -> str:
    """The name of a new record file (without ``.json``): the time in nanoseconds, as TorchX's
    names are, zero-padded so names sort by time, then a random part so two writers in the same
    nanosecond never clash."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


class FsspecTracker(TrackerBase):
    """Records runs under ``root`` of the filesystem ``fs``.

    Args:
        fs: any fsspec filesystem (local, memory, s3, gcs ...)
        root: the tracker's root directory on ``fs`` (created on local filesystems)
    """

    def __init__(self, fs: fsspec.AbstractFileSystem, root: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/") or "/"
        self._local = isinstance(fs, LocalFileSystem)
        if self._local:
            fs.makedirs(self.root, exist_ok=True)

    def __repr__(self) -> str:
        return f"FsspecTracker({self.fs.unstrip_protocol(self.root)})"

    # ------------------------------------------------------------------ paths
    def _run_dir(self, run_id: str) -> str:
        return posixpath.join(self.root, "runs", runkeys.encode(run_id))

    def _children_dir(self, run_id: str) -> str:
        return posixpath.join(self.root, "children", runkeys.encode(run_id))

    # ------------------------------------------------------------------ storage
    def _put(self, path: str, record: Mapping[str, Any]) -> None:
        data = json.dumps(record, sort_keys=True).encode("utf-8")
        if not self._local:
            self.fs.pipe_file(path, data)
            return
        parent, name = posixpath.split(path)
        self.fs.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".{name}.{uuid.uuid4().hex}.tmp")
        self.fs.pipe_file(tmp, data)
        self.fs.mv(tmp, path)

    def _list(self, directory: str, kind: str = "file") -> list[str]:
        """Paths of the entries of ``directory`` of type ``kind``, sorted; hidden ones skipped."""
        self.fs.invalidate_cache(directory)
        try:
            entries = self.fs.ls(directory, detail=True)
        except FileNotFoundError:
            return []
        return sorted(
            e["name"].rstrip("/")
            for e in entries
            if e.get("type") == kind and not posixpath.basename(e["name"].rstrip("/")).startswith(".")
        )

    def _read(self, path: str) -> dict[str, Any] | None:
        try:
            record = json.loads(self.fs.cat_file(path))
        except FileNotFoundError:
            return None
        except (ValueError, UnicodeDecodeError) as e:
            logger.warning("skipping unreadable tracker record %s: %s", path, e)
            return None
        if not isinstance(record, dict):
            logger.warning("skipping tracker record %s: not a JSON object", path)
            return None
        return record

    def _records(self, run_id: str, category: str) -> list[dict[str, Any]]:
        directory = posixpath.join(self._run_dir(run_id), category)
        return [r for r in (self._read(p) for p in self._list(directory)) if r is not None]

    def _add_record(self, run_id: str, category: str, record: Mapping[str, Any]) -> None:
        run_dir = self._run_dir(run_id)
        self._remember_run_id(run_id, run_dir)
        name = f"{generate_filename()}.json"
        self._put(posixpath.join(run_dir, category, name), record)

    def _remember_run_id(self, run_id: str, run_dir: str) -> None:
        """Stores the id next to a hashed key (the key alone cannot be decoded)."""
        if runkeys.is_hashed(posixpath.basename(run_dir)):
            path = posixpath.join(run_dir, "run_id.json")
            if not self.fs.exists(path):
                self._put(path, {"run_id": run_id})

    def _run_id_of(self, path: str) -> str | None:
        """The run id a run directory or index file (``<key>[.json]``) stands for."""
        key = posixpath.basename(path).removesuffix(".json")
        if not runkeys.is_hashed(key):
            try:
                return runkeys.decode(key)
            except ValueError:
                logger.warning("skipping %s: not a tracker run", path)
                return None
        record = self._read(posixpath.join(path, "run_id.json") if not path.endswith(".json") else path)
        run_id = record.get("run_id") if record else None
        return run_id if isinstance(run_id, str) else None

    # ------------------------------------------------------------------ artifacts
    def add_artifact(self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None) -> None:
        """Records artifact ``name`` at ``path``; recording a name again replaces it."""
        if not name or not isinstance(name, str):
            raise ValueError(f"run {run_id}: an artifact needs a non-empty name, got {name!r}")
        if not isinstance(path, str):
            raise ValueError(f"run {run_id}: the path of artifact {name!r} must be a str, got {type(path).__name__}")
        record = {"name": name, "path": path, "metadata": None if metadata is None else dict(metadata)}
        _check_json(record, f"run {run_id}: metadata of artifact {name!r}")
        self._add_record(run_id, "artifacts", record)

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """Artifacts by name (the latest recording of each name)."""
        found: dict[str, TrackerArtifact] = {}
        for record in self._records(run_id, "artifacts"):
            name, path, metadata = record.get("name"), record.get("path"), record.get("metadata")
            if isinstance(name, str) and isinstance(path, str):
                found[name] = TrackerArtifact(
                    name=name, path=path, metadata=metadata if isinstance(metadata, dict) else None
                )
        return found

    # ------------------------------------------------------------------ metadata
    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Records metadata (JSON values); later values of a key win."""
        if not kwargs:
            return
        record = {"metadata": kwargs}
        _check_json(record, f"run {run_id}: metadata")
        self._add_record(run_id, "metadata", record)

    def metadata(self, run_id: str) -> Mapping[str, object]:
        """All metadata of the run, merged in the order it was recorded."""
        merged: dict[str, object] = {}
        for record in self._records(run_id, "metadata"):
            values = record.get("metadata")
            if isinstance(values, dict):
                merged.update(values)
        return merged

    # ------------------------------------------------------------------ lineage
    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` descends from ``source_id`` (idempotent)."""
        if not source_id or not isinstance(source_id, str):
            raise ValueError(f"run {run_id}: a source needs a non-empty run id, got {source_id!r}")
        digest = hashlib.sha256(f"{source_id}\0{artifact_name or ''}".encode()).hexdigest()[:32]
        run_dir = self._run_dir(run_id)
        self._remember_run_id(run_id, run_dir)
        self._put(
            posixpath.join(run_dir, "sources", f"{digest}.json"),
            {"source_run_id": source_id, "artifact_name": artifact_name},
        )
        self._put(posixpath.join(self._children_dir(source_id), f"{runkeys.encode(run_id)}.json"), {"run_id": run_id})

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """Sources of ``run_id`` sorted by source run id (only those through ``artifact_name`` if given)."""
        found = []
        for record in self._records(run_id, "sources"):
            source_id, artifact = record.get("source_run_id"), record.get("artifact_name")
            if not isinstance(source_id, str) or not (artifact is None or isinstance(artifact, str)):
                continue
            if artifact_name is None or artifact == artifact_name:
                found.append(TrackerSource(source_run_id=source_id, artifact_name=artifact))
        return sorted(found, key=lambda s: (s.source_run_id, s.artifact_name or ""))

    def lineage(self, run_id: str) -> Lineage:
        """``run_id``, its sources and their lineage, recursively."""
        return build_lineage(run_id, self.sources)

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Every recorded run id, sorted; ``parent_run_id=X`` keeps only runs with source X."""
        unknown = sorted(set(kwargs) - set(_RUN_FILTERS))
        if unknown:
            raise ValueError(f"unknown run filter(s) {', '.join(unknown)}; supported: {', '.join(_RUN_FILTERS)}")
        parent = kwargs.get("parent_run_id")
        if parent:
            paths = self._list(self._children_dir(parent))
        else:
            paths = self._list(posixpath.join(self.root, "runs"), kind="directory")
        return sorted({rid for rid in map(self._run_id_of, paths) if rid is not None})


def _check_json(record: Mapping[str, Any], what: str) -> None:
    try:
        json.dumps(record)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{what} is not JSON-serializable ({e}); record str, numbers, bools, lists and dicts"
        ) from None


def create(config: str | None) -> FsspecTracker:
    """The ``fsspec`` tracker factory (see :mod:`torchx_tracker.fsspec_config` for ``config``).

    Raises:
        ValueError: no config, or a malformed settings file
        ImportError: the URL's filesystem needs a package that is not installed (e.g. s3fs)
    """
    if not config or not config.strip():
        raise ValueError(
            "the fsspec tracker needs a root directory: set `config = /path/or/url` in the"
            " [tracker:fsspec] section of .torchxconfig (or TORCHX_TRACKER_FSSPEC_CONFIG)"
        )
    fs, path = url_to_fs(config.strip())
    if not fs.isfile(path):
        return FsspecTracker(fs, path)
    with fs.open(path, "rt") as f:
        settings = parse_settings(f.read(), config)
    target = fsspec.filesystem(settings.protocol, **settings.storage_options)
    return FsspecTracker(target, target._strip_protocol(settings.root_path))
