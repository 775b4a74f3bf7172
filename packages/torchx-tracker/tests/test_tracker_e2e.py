"""End to end with real processes (core's test scheduler ``procs``, so no scheduler
distribution is needed): ``torchx run --parent_run_id`` a 2-replica job that records into the
fsspec tracker, then ``torchx tracker list ...``.

Everything runs as subprocesses in a temporary cwd holding ``.torchxconfig``, with HOME
set to a temporary directory so the user's own config is never read.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import run_cli
from torchx.testing.procs import use_procs

pytestmark = pytest.mark.slow

JOB = str(Path(__file__).with_name("tracker_job.py"))
PARENT = "local_cwd://torchx/prepare-data-0"

COMPONENT = textwrap.dedent(
    f'''
    import torchx.specs as specs


    def tracked(script: str, replicas: int = 2) -> specs.AppDef:
        """Runs a script that records into the configured trackers.

        Args:
            script: the python script to run
            replicas: how many replicas
        """
        role = specs.Role(
            name="trainer", image=".", entrypoint={sys.executable!r}, args=[script], num_replicas=replicas,
            env={{"REPLICA": specs.macros.replica_id}}, resource=specs.Resource(cpu=1, gpu=0, memMB=256),
        )
        return specs.AppDef(name="tracked", roles=[role])
    '''
)


@pytest.fixture(autouse=True)
def procs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The scheduler the jobs run on."""
    return use_procs(tmp_path, monkeypatch)


def run_tracked_job(cwd: Path) -> str:
    """Runs the job to completion with ``--parent_run_id`` (the tracker of ``cwd``'s
    ``.torchxconfig``); returns its app handle."""
    (cwd / "tracked_component.py").write_text(COMPONENT)
    proc = run_cli(
        "run",
        "-s",
        "procs",
        "--wait",
        "--parent_run_id",
        PARENT,
        "tracked_component.py:tracked",
        "--script",
        JOB,
        cwd=cwd,
        timeout=300,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    handle = proc.stdout.splitlines()[0].strip()
    assert handle.startswith("procs://torchx/"), proc.stdout
    return handle


def tracker_json(cwd: Path, *args: str) -> Any:
    proc = run_cli("tracker", "list", *args, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_job_records_artifacts_and_metadata(isolated: Path, configured_store: str) -> None:
    handle = run_tracked_job(isolated)
    assert handle in tracker_json(isolated, "jobs")
    assert tracker_json(isolated, "metadata", handle) == {"lr": 0.1, "replica_0": True, "replica_1": True}
    artifacts = tracker_json(isolated, "artifacts", "--artifact", "model", handle)
    assert [(a["name"], a["metadata"]) for a in artifacts] == [("model", {"acc": 0.9})]
    proc = run_cli("tracker", "list", "metadata", handle, cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    assert "replica_1" in proc.stdout, proc.stderr


def test_job_records_its_parent(isolated: Path, configured_store: str) -> None:
    handle = run_tracked_job(isolated)
    assert tracker_json(isolated, "jobs", "--parent-run-id", PARENT) == [handle]
    assert tracker_json(isolated, "lineage", handle) == {
        "run_id": handle,
        "sources": [{"source_run_id": PARENT, "artifact_name": None}],
        "parents": [{"run_id": PARENT, "sources": [], "parents": []}],
    }
    proc = run_cli("tracker", "list", "lineage", handle, cwd=isolated)
    assert proc.stdout.splitlines() == [handle, f"└── {PARENT}"]
