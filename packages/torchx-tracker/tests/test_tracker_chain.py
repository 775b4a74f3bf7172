"""The configuration chain without a scheduler package: ``.torchxconfig`` -> ``Runner.dryrun``
env -> a real job process (``AppRun.run_from_env``) -> ``torchx tracker list`` (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from torchx.runner.api import Runner
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs import AppDef, AppDryRunInfo, Resource, Role, macros
from torchx.testing import run_cli
from torchx.tracker import AppRun
from torchx_tracker.fsspec_backend import create

JOB = str(Path(__file__).with_name("tracker_job.py"))
PARENT = "local_cwd://torchx/parent-0"


class EnvScheduler(Scheduler[Any, Any, Any]):
    """Only builds requests: each replica's env and command, macros filled in (app id ``chain-1``)."""

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("envsched", session_name)

    def _submit_dryrun(self, app: AppDef, cfg: Any) -> AppDryRunInfo[Any]:
        replicas = []
        for role in app.roles:
            for i in range(role.num_replicas):
                r = macros.Values(img_root="", app_id="chain-1", replica_id=str(i)).apply(role)
                replicas.append({"env": {**r.env, "REPLICA": str(i)}, "cmd": [r.entrypoint, *r.args]})
        return AppDryRunInfo(replicas)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        raise NotImplementedError

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        raise NotImplementedError

    def list(self, cfg: Any = None) -> list[ListAppResponse]:
        raise NotImplementedError

    def _cancel_existing(self, app_id: str) -> None:
        raise NotImplementedError


def launch(parent_run_id: str | None) -> list[dict[str, Any]]:
    """Dry-runs a 2-replica job through the real Runner and runs its replicas as processes."""
    app = AppDef(
        "tracked",
        roles=[
            Role(
                "trainer",
                image="",
                entrypoint=sys.executable,
                args=[JOB],
                num_replicas=2,
                resource=Resource(cpu=1, gpu=0, memMB=256),
            )
        ],
    )
    runner = Runner("torchx", {"envsched": EnvScheduler})
    replicas: list[dict[str, Any]] = runner.dryrun(app, "envsched", parent_run_id=parent_run_id).request
    procs = [
        subprocess.Popen(r["cmd"], env={**os.environ, **r["env"]}, stdout=subprocess.PIPE, text=True) for r in replicas
    ]
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0, out
    return replicas


def test_runner_puts_the_tracker_config_into_the_job_env(configured_store: str) -> None:
    replicas = launch(PARENT)
    env = replicas[0]["env"]
    assert env["TORCHX_TRACKERS"] == "fsspec"
    assert env["TORCHX_TRACKER_FSSPEC_CONFIG"] == configured_store
    assert env["TORCHX_PARENT_RUN_ID"] == PARENT
    assert env["TORCHX_JOB_ID"] == "envsched://torchx/chain-1"


def test_job_records_its_artifacts_and_metadata(configured_store: str, isolated: Path) -> None:
    launch(PARENT)
    run_id = "envsched://torchx/chain-1"
    tracker = create(configured_store)
    assert tracker.metadata(run_id) == {"lr": 0.1, "replica_0": True, "replica_1": True}
    assert tracker.artifacts(run_id)["model"].path in ("/ckpt/0/model.pt", "/ckpt/1/model.pt")

    proc = run_cli("tracker", "list", "metadata", run_id, "--json", cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"lr": 0.1, "replica_0": True, "replica_1": True}
    proc = run_cli("tracker", "list", "artifacts", "--artifact", "model", run_id, cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    assert "model" in proc.stdout
    assert "/model.pt" in proc.stdout


def test_job_records_its_parent_automatically(configured_store: str, isolated: Path) -> None:
    launch(PARENT)
    proc = run_cli("tracker", "list", "jobs", "--parent-run-id", PARENT, "--json", cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["envsched://torchx/chain-1"]


def test_run_from_env_outside_a_job_records_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = AppRun.run_from_env()
    assert run.id == "<UNDEFINED>"
    assert list(run.backends) == []
    monkeypatch.setenv("TORCHX_TRACKERS", "fsspec")  # configured but without a root: skipped with a warning
    assert list(AppRun.run_from_env().backends) == []
