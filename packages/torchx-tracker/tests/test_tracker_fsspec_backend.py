"""The fsspec tracker on a local directory and on ``memory://``."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import fsspec
import pytest
from torchx.tracker.api import Lineage, TrackerArtifact, TrackerSource
from torchx_tracker import runkeys
from torchx_tracker.fsspec_backend import FsspecTracker, create

RUN = "local_cwd://torchx/echo-abc123"
PARENT = "slurm://torchx/4242"
GRANDPARENT = "kubernetes://torchx/default:train-xyz"


def test_artifacts_roundtrip_and_latest_wins(tracker_root: str) -> None:
    tracker = create(tracker_root)
    tracker.add_artifact(RUN, "model", "s3://bucket/model-v1.pt", {"epoch": 1})
    tracker.add_artifact(RUN, "logs", "/tmp/logs")
    tracker.add_artifact(RUN, "model", "s3://bucket/model-v2.pt", {"epoch": 2})
    assert tracker.artifacts(RUN) == {
        "model": TrackerArtifact("model", "s3://bucket/model-v2.pt", {"epoch": 2}),
        "logs": TrackerArtifact("logs", "/tmp/logs", None),
    }
    assert create(tracker_root).artifacts(RUN)["model"].path == "s3://bucket/model-v2.pt"  # a second reader


def test_metadata_merges_in_order(tracker_root: str) -> None:
    tracker = create(tracker_root)
    tracker.add_metadata(RUN, lr=0.1, epochs=3, tags=["a", "b"])
    tracker.add_metadata(RUN, lr=0.01, nested={"k": [1, 2]})
    tracker.add_metadata(RUN)  # nothing to record
    assert tracker.metadata(RUN) == {"lr": 0.01, "epochs": 3, "tags": ["a", "b"], "nested": {"k": [1, 2]}}


def test_unknown_run_is_empty(tracker_root: str) -> None:
    tracker = create(tracker_root)
    assert tracker.metadata("local_cwd://torchx/nope") == {}
    assert tracker.artifacts("local_cwd://torchx/nope") == {}
    assert list(tracker.sources("local_cwd://torchx/nope")) == []
    assert list(tracker.run_ids()) == []
    assert tracker.lineage("local_cwd://torchx/nope") == Lineage("local_cwd://torchx/nope", [], [])


def test_bad_records_are_refused_with_a_clear_message(tracker_root: str) -> None:
    tracker = create(tracker_root)
    with pytest.raises(ValueError, match=r"run .*: metadata is not JSON-serializable .*record str, numbers"):
        tracker.add_metadata(RUN, when=object())
    with pytest.raises(ValueError, match="metadata of artifact 'm' is not JSON-serializable"):
        tracker.add_artifact(RUN, "m", "/p", {"x": {1, 2}})
    with pytest.raises(ValueError, match="an artifact needs a non-empty name"):
        tracker.add_artifact(RUN, "", "/p")
    with pytest.raises(ValueError, match="a source needs a non-empty run id"):
        tracker.add_source(RUN, "")
    with pytest.raises(ValueError, match="a run id must not be empty"):
        tracker.add_metadata("", a=1)
    assert list(tracker.run_ids()) == []  # nothing half-written


def test_sources_filter_and_idempotence(tracker_root: str) -> None:
    tracker = create(tracker_root)
    for _ in range(3):  # every replica records the parent: no duplicates
        tracker.add_source(RUN, PARENT)
    tracker.add_source(RUN, PARENT, "model")
    tracker.add_source(RUN, GRANDPARENT, "dataset")
    assert list(tracker.sources(RUN)) == [
        TrackerSource(GRANDPARENT, "dataset"),
        TrackerSource(PARENT, None),
        TrackerSource(PARENT, "model"),
    ]
    assert list(tracker.sources(RUN, "model")) == [TrackerSource(PARENT, "model")]
    assert list(tracker.sources(RUN, "nothing")) == []


def test_run_ids_and_parent_filter(tracker_root: str) -> None:
    tracker = create(tracker_root)
    children = [f"local_cwd://torchx/child-{i}" for i in range(3)]
    tracker.add_metadata(PARENT, role="hpo")
    for child in children:
        tracker.add_source(child, PARENT, "trial")
    tracker.add_artifact(RUN, "x", "/x")
    assert list(tracker.run_ids()) == sorted([PARENT, RUN, *children])
    assert list(tracker.run_ids(parent_run_id=PARENT)) == children
    assert list(tracker.run_ids(parent_run_id=RUN)) == []
    assert list(tracker.run_ids(parent_run_id="local_cwd://torchx/unknown")) == []
    with pytest.raises(ValueError, match="unknown run filter.*owner; supported: parent_run_id"):
        tracker.run_ids(owner="me")


def test_parent_filter_without_a_recorded_parent(tracker_root: str) -> None:
    tracker = create(tracker_root)
    tracker.add_source(RUN, PARENT)  # the parent itself recorded nothing
    assert list(tracker.run_ids()) == [RUN]
    assert list(tracker.run_ids(parent_run_id=PARENT)) == [RUN]


def test_lineage_is_recursive(tracker_root: str) -> None:
    tracker = create(tracker_root)
    tracker.add_source(RUN, PARENT, "model")
    tracker.add_source(PARENT, GRANDPARENT, "dataset")
    lineage = tracker.lineage(RUN)
    assert lineage == Lineage(
        RUN,
        [TrackerSource(PARENT, "model")],
        [Lineage(PARENT, [TrackerSource(GRANDPARENT, "dataset")], [Lineage(GRANDPARENT, [], [])])],
    )


def test_lineage_diamond_and_cycle(tracker_root: str) -> None:
    tracker = create(tracker_root)
    a, b, c, d = (f"local_cwd://torchx/{x}" for x in "abcd")
    tracker.add_source(d, b)
    tracker.add_source(d, c)
    tracker.add_source(b, a)
    tracker.add_source(c, a)
    tracker.add_source(a, d)  # a cycle back to d
    lineage = tracker.lineage(d)
    assert [p.run_id for p in lineage.parents] == [b, c]
    assert lineage.parents[0].parents[0].run_id == a
    assert lineage.parents[0].parents[0].parents == []  # d is not expanded again
    assert lineage.parents[1].parents[0] is lineage.parents[0].parents[0]
    json.dumps(dataclasses.asdict(lineage))  # finite


def test_run_ids_with_odd_characters_and_long_ids(tracker_root: str) -> None:
    tracker = create(tracker_root)
    odd = ["local_cwd://torchx/Echo-ABC", "local_cwd://torchx/echo-abc", "k8s://s/ns:name/é ü?#%", "x" * 1000]
    for rid in odd:
        tracker.add_metadata(rid, id=rid)
    tracker.add_source(odd[3], odd[2])
    tracker.add_source(odd[0], odd[3])
    assert list(tracker.run_ids()) == sorted(odd)
    for rid in odd:
        assert tracker.metadata(rid) == {"id": rid}
    assert list(tracker.run_ids(parent_run_id=odd[2])) == [odd[3]]
    assert list(tracker.run_ids(parent_run_id=odd[3])) == [odd[0]]
    assert [p.run_id for p in tracker.lineage(odd[0]).parents[0].parents] == [odd[2]]


def test_writers_in_threads_all_land(tracker_root: str) -> None:
    tracker = create(tracker_root)

    def write(i: int) -> None:
        for j in range(10):
            tracker.add_metadata(RUN, **{f"k{i}_{j}": j})
            tracker.add_artifact(RUN, f"a{i}_{j}", f"/p/{i}/{j}")
            tracker.add_source(RUN, PARENT)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tracker.metadata(RUN)) == 60
    assert len(tracker.artifacts(RUN)) == 60
    assert list(tracker.sources(RUN)) == [TrackerSource(PARENT, None)]


#: one replica writing to the tracker: python -c REPLICA ROOT RUN PARENT REPLICA_ID N
REPLICA = """
import sys
from torchx_tracker.fsspec_backend import create

root, run, parent, replica, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
tracker = create(root)
for j in range(n):
    tracker.add_metadata(run, **{f"r{replica}_{j}": j, "last_writer": replica})
    tracker.add_artifact(run, f"ckpt-{replica}-{j}", f"/ckpt/{replica}/{j}")
    tracker.add_source(run, parent, "model")
"""


def test_writers_in_processes_all_land(tmp_path: Path) -> None:
    root = str(tmp_path / "tracker")
    procs = [
        subprocess.Popen([sys.executable, "-c", REPLICA, root, RUN, PARENT, str(r), "20"], stderr=subprocess.PIPE)
        for r in range(4)
    ]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    tracker = create(root)
    metadata = tracker.metadata(RUN)
    assert len(metadata) == 4 * 20 + 1
    assert metadata["last_writer"] in range(4)
    assert len(tracker.artifacts(RUN)) == 80
    assert list(tracker.sources(RUN)) == [TrackerSource(PARENT, "model")]
    leftovers = [f for _, _, files in os.walk(root) for f in files if f.startswith(".")]
    assert leftovers == []


def test_layout_one_file_per_write(tmp_path: Path) -> None:
    root = tmp_path / "tracker"
    tracker = create(str(root))
    tracker.add_metadata(RUN, a=1)
    tracker.add_metadata(RUN, a=2)
    metadata_dir = root / "runs" / runkeys.encode(RUN) / "metadata"
    files = sorted(metadata_dir.iterdir())
    assert len(files) == 2
    assert [json.loads(f.read_text()) for f in files] == [{"metadata": {"a": 1}}, {"metadata": {"a": 2}}]


def test_unreadable_and_hidden_files_are_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "tracker"
    tracker = create(str(root))
    tracker.add_metadata(RUN, good=True)
    metadata_dir = root / "runs" / runkeys.encode(RUN) / "metadata"
    (metadata_dir / "99999999999999999999-broken.json").write_text("{not json")
    (metadata_dir / ".00000000000000000001-x.json.tmp").write_text('{"metadata": {"hidden": 1}}')
    (root / "runs" / "not-base32!").mkdir()
    with caplog.at_level(logging.WARNING):
        assert tracker.metadata(RUN) == {"good": True}
        assert list(tracker.run_ids()) == [RUN]
    assert "skipping unreadable tracker record" in caplog.text
    assert "not a tracker run" in caplog.text


def test_create_from_url_and_paths(tmp_path: Path, memory_root: str) -> None:
    local = create(f"file://{tmp_path}/a")
    assert isinstance(local, FsspecTracker)
    assert local.root == f"{tmp_path}/a"
    assert (tmp_path / "a").is_dir()  # local roots are created
    assert repr(local) == f"FsspecTracker(file://{tmp_path}/a)"
    mem = create(memory_root)
    mem.add_metadata(RUN, x=1)
    assert create(memory_root).metadata(RUN) == {"x": 1}


def test_create_from_settings_file(tmp_path: Path, memory_root: str) -> None:
    settings = tmp_path / "tracker.conf"
    settings.write_text(f"# upstream-style settings\nprotocol = file\nroot_path = {tmp_path}/store\n")
    tracker = create(str(settings))
    tracker.add_metadata(RUN, x=1)
    assert (tmp_path / "store" / "runs" / runkeys.encode(RUN)).is_dir()

    fs, path = fsspec.core.url_to_fs(memory_root)
    fs.pipe_file(f"{path}/settings.conf", f"protocol = memory\nroot_path = {path}/data\n".encode())
    tracker = create(f"{memory_root}/settings.conf")
    tracker.add_metadata(RUN, y=2)
    assert fs.exists(f"{path}/data/runs/{runkeys.encode(RUN)}")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("root_path = /x\n", "missing protocol; add e.g. `protocol = file`"),
        ("protocol = file\n", "missing root_path"),
        ("protocol = file\nroot_path = /x\njunk line\n", r":3: expected `key = value`"),
        ("protocol = file\nprotocol = s3\nroot_path = /x\n", "'protocol' is set twice"),
    ],
)
def test_bad_settings_file(tmp_path: Path, text: str, error: str) -> None:
    settings = tmp_path / "tracker.conf"
    settings.write_text(text)
    with pytest.raises(ValueError, match=error):
        create(str(settings))


def test_create_without_config() -> None:
    with pytest.raises(
        ValueError, match=r"needs a root directory: set `config = /path/or/url` in the \[tracker:fsspec\]"
    ):
        create(None)
    with pytest.raises(ValueError, match="needs a root directory"):
        create("  ")
