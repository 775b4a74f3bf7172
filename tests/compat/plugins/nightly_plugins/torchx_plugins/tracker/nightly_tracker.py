"""A tracker that appends what runs report to a JSON-lines file (the tracker's config)."""

import json
import os
from typing import Iterable, Mapping, Optional

from torchx.plugins import register
from torchx.tracker.api import Lineage, TrackerArtifact, TrackerBase, TrackerSource


class JsonLinesTracker(TrackerBase):
    def __init__(self, path: str) -> None:
        self.path = path

    def _write(self, **record: object) -> None:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def _records(self, run_id: str) -> list:
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            return [r for r in map(json.loads, f) if r["run_id"] == run_id]

    def add_artifact(self, run_id: str, name: str, path: str, metadata: Optional[Mapping[str, object]] = None) -> None:
        self._write(run_id=run_id, kind="artifact", name=name, path=path, metadata=dict(metadata or {}))

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        return {
            r["name"]: TrackerArtifact(r["name"], r["path"], r["metadata"])
            for r in self._records(run_id)
            if r["kind"] == "artifact"
        }

    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        self._write(run_id=run_id, kind="metadata", values=kwargs)

    def metadata(self, run_id: str) -> Mapping[str, object]:
        out: dict = {}
        for r in self._records(run_id):
            if r["kind"] == "metadata":
                out.update(r["values"])
        return out

    def add_source(self, run_id: str, source_id: str, artifact_name: Optional[str] = None) -> None:
        self._write(run_id=run_id, kind="source", source_id=source_id, artifact_name=artifact_name)

    def sources(self, run_id: str, artifact_name: Optional[str] = None) -> Iterable[TrackerSource]:
        return [
            TrackerSource(r["source_id"], r["artifact_name"])
            for r in self._records(run_id)
            if r["kind"] == "source" and (artifact_name is None or r["artifact_name"] == artifact_name)
        ]

    def lineage(self, run_id: str) -> Lineage:
        raise NotImplementedError

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            return sorted({json.loads(line)["run_id"] for line in f})


@register.tracker()
def nightly_jsonl(config: Optional[str]) -> TrackerBase:
    """Tracker factory: ``config`` is the path of the JSON-lines file."""
    return JsonLinesTracker(config or os.path.join(os.getcwd(), "nightly-tracker.jsonl"))
