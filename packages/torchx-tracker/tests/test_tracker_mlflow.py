"""The mlflow tracker on a local MLflow file store (needs ``torchx-tracker[mlflow]``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mlflow", reason="MLflow is not installed: pip install 'torchx-tracker[mlflow]'")

from torchx import testing
from torchx.cli.main import run_cli
from torchx.tracker.api import Lineage, TrackerArtifact, TrackerSource
from torchx_tracker.mlflow_backend import TAG_RUN_ID, TAG_RUN_KEY, MlflowTracker, create

RUN = "local_cwd://torchx/train-abc"
PARENT = "local_cwd://torchx/prep-1"
GRANDPARENT = "slurm://torchx/77"


@pytest.fixture
def uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return f"file://{tmp_path}/mlruns"


def test_roundtrip(uri: str) -> None:
    tracker = create(uri)
    assert list(tracker.run_ids()) == []
    assert tracker.metadata(RUN) == {}
    tracker.add_metadata(RUN, lr=0.1, layers=[64, 32])
    tracker.add_metadata(RUN, lr=0.01)
    tracker.add_artifact(RUN, "model", "s3://b/m.pt", {"acc": 0.9})
    tracker.add_artifact(RUN, "logs", "/logs")
    tracker.add_source(RUN, PARENT, "dataset")
    tracker.add_source(RUN, PARENT, "dataset")
    tracker.add_source(PARENT, GRANDPARENT)

    reader = create(f"{uri};experiment=torchx")  # a second client sees the same
    assert reader.metadata(RUN) == {"lr": 0.01, "layers": [64, 32]}
    assert reader.artifacts(RUN) == {
        "model": TrackerArtifact("model", "s3://b/m.pt", {"acc": 0.9}),
        "logs": TrackerArtifact("logs", "/logs", None),
    }
    assert list(reader.sources(RUN)) == [TrackerSource(PARENT, "dataset")]
    assert list(reader.sources(RUN, "other")) == []
    assert list(reader.run_ids()) == sorted([RUN, PARENT])
    assert list(reader.run_ids(parent_run_id=PARENT)) == [RUN]
    assert reader.lineage(RUN) == Lineage(
        RUN,
        [TrackerSource(PARENT, "dataset")],
        [Lineage(PARENT, [TrackerSource(GRANDPARENT, None)], [Lineage(GRANDPARENT)])],
    )
    assert list(create(f"{uri};experiment=other").run_ids()) == []


def test_runs_are_named_after_the_run_id(uri: str) -> None:
    tracker = create(uri)
    tracker.add_metadata(RUN, x=1)
    experiment = tracker.client.get_experiment_by_name("torchx")
    assert experiment is not None
    (run,) = tracker.client.search_runs([experiment.experiment_id])
    assert run.info.run_name == RUN
    assert run.data.tags["torchx.metadata.x"] == "1"


def test_duplicate_mlflow_runs_are_merged(uri: str) -> None:
    tracker = create(uri)
    tracker.add_metadata(RUN, x=1, shared="first")
    key = hashlib.sha256(RUN.encode()).hexdigest()[:32]
    experiment = tracker.client.get_experiment_by_name("torchx")
    assert experiment is not None
    # what a replica racing the first one leaves behind: a second MLflow run with the same key
    tags = {TAG_RUN_ID: RUN, TAG_RUN_KEY: key, "torchx.metadata.y": "2", "torchx.metadata.shared": '"second"'}
    tracker.client.create_run(experiment.experiment_id, tags=tags)
    reader = create(uri)
    assert reader.metadata(RUN) == {"x": 1, "y": 2, "shared": "second"}
    assert list(reader.run_ids()) == [RUN]


#: one replica writing to the tracker: python -c REPLICA URI RUN PARENT REPLICA_ID
REPLICA = """
import sys
from torchx_tracker.mlflow_backend import create

uri, run, parent, replica = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tracker = create(uri)
for j in range(5):
    tracker.add_metadata(run, **{f"r{replica}_{j}": j})
tracker.add_source(run, parent)
"""


@pytest.mark.slow
def test_concurrent_replicas_merge(uri: str) -> None:
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"}
    procs = [
        subprocess.Popen([sys.executable, "-c", REPLICA, uri, RUN, PARENT, str(r)], env=env, stderr=subprocess.PIPE)
        for r in range(3)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    tracker = create(uri)
    assert len(tracker.metadata(RUN)) == 15
    assert list(tracker.sources(RUN)) == [TrackerSource(PARENT, None)]
    assert list(tracker.run_ids()) == [RUN]


def test_errors(uri: str) -> None:
    with pytest.raises(ValueError, match=r"needs a tracking URI: set `config = file:///path/mlruns`"):
        create(None)
    with pytest.raises(ValueError, match="unknown mlflow tracker option 'exp=x'"):
        create(f"{uri};exp=x")
    tracker = create(uri)
    with pytest.raises(ValueError, match="metadata 'x' is not JSON-serializable"):
        tracker.add_metadata(RUN, x=object())
    with pytest.raises(ValueError, match="MLflow tags hold at most 8000"):
        tracker.add_metadata(RUN, x="y" * 9000)
    with pytest.raises(ValueError, match="unknown run filter"):
        tracker.run_ids(user="me")
    assert isinstance(tracker, MlflowTracker)


def test_cli_reads_mlflow(uri: str, isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    create(uri).add_metadata(RUN, lr=0.5)
    (isolated / ".torchxconfig").write_text(f"[torchx:tracker]\nmlflow =\n\n[tracker:mlflow]\nconfig = {uri}\n")
    assert run_cli(["tracker", "list", "metadata", RUN, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lr": 0.5}
    proc = testing.run_cli("tracker", "list", "jobs", cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    assert RUN in proc.stdout


def test_runs_of_experiments_made_twice_at_once_are_read(uri: str) -> None:
    """MLflow's file store checks an experiment's name, then creates it: two replicas that make it at
    once make one each (a loaded CI run lost one replica's metadata so). Both are read."""
    first = create(uri)
    first.add_metadata(RUN, a=1)
    twin = first.client._tracking_client.store._create_experiment_with_id("torchx", "999", None, None)
    assert twin == "999"
    tags = {TAG_RUN_ID: RUN, TAG_RUN_KEY: hashlib.sha256(RUN.encode()).hexdigest()[:32], "torchx.metadata.b": "2"}
    first.client.create_run("999", tags=tags)
    reader = create(uri)
    assert reader.metadata(RUN) == {"a": 1, "b": 2}
    assert list(reader.run_ids()) == [RUN]
