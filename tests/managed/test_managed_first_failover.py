"""Failover on the first attempt (issue 29 point 6), with the docker SDK missing for real: the
CLI runs with a ``docker`` package first on ``PYTHONPATH`` that is not importable (what Python
raises when a package is absent), so ``local_docker`` cannot submit. ``torchx run -s managed``
dry-runs every target up front (one that cannot run the app is skipped with a warning saying
why), records a failed first submission as an attempt ``NO_CAPACITY`` naming the error and
fails over to the next target; when no target can take the job, one line says each target's
reason and nothing is left.

Needs torchx-sched-local (local_cwd, local_docker) and torchx-components (utils.echo): it is in
the root tests/ tree, which the e2e session runs with every package installed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import eventually, processes_naming, run_cli
from torchx_managed.journal import ManagedStore

NO_SDK = "the docker SDK is not installed"


@pytest.fixture
def no_docker(tmp_path: Path) -> dict[str, str]:
    """The environment of a CLI (and of the drivers it starts) where ``import docker`` fails as
    for a package that is not installed."""
    shim = tmp_path / "no-docker"
    (shim / "docker").mkdir(parents=True)
    (shim / "docker" / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'docker\'", name="docker")\n'
    )
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def status(handle: str, env: dict[str, str]) -> dict[str, Any]:
    run = run_cli("status", "--json", handle, env=env)
    assert run.returncode == 0, run.stderr
    data: dict[str, Any] = json.loads(run.stdout)
    return data


def test_the_sdk_is_really_missing_in_that_environment(no_docker: dict[str, str]) -> None:
    run = run_cli("run", "-s", "managed", "-cfg", "targets=local_docker,controller=local", "utils.echo", env=no_docker)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [f"torchx: error: {NO_SDK}: pip install 'torchx-sched-local[docker]'"]
    assert ManagedStore().job_ids() == []  # the only target's submission failed: nothing is left


def test_a_failed_first_submission_fails_over_to_the_next_target(no_docker: dict[str, str]) -> None:
    run = run_cli(
        "run", "-s", "managed", "-cfg", "targets=local_docker;local_cwd", "utils.echo", "--msg", "hi", env=no_docker
    )
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://"), run.stdout
    assert (
        f"torchx: warning: managed: attempt 0 could not be submitted to local_docker ({NO_SDK}" in run.stderr
        and "failing over to local_cwd" in run.stderr
    ), run.stderr
    eventually(lambda: status(handle, no_docker)["state"] == "SUCCEEDED", timeout=60, what="the job succeeds")
    attempts = status(handle, no_docker)["attempts"]
    assert isinstance(attempts, list)
    assert [(a["attempt"], a["scheduler"], a["state"], a["cause"]) for a in attempts] == [
        (0, "local_docker", "FAILED", "NO_CAPACITY"),
        (1, "local_cwd", "SUCCEEDED", None),
    ]
    assert attempts[0]["handle"] is None and attempts[0]["reason"].startswith(f"submission failed: {NO_SDK}")
    text = run_cli("status", handle, env=no_docker).stdout
    assert "NO_CAPACITY  exit=-" in text and f"submission failed: {NO_SDK}" in text, text
    log = run_cli("log", handle, env=no_docker)
    assert log.returncode == 0 and "hi" in log.stdout, (log.stdout, log.stderr)
    job_id = handle.rsplit("/", 1)[1]
    eventually(lambda: processes_naming(job_id) == [], timeout=30, what="no process of the job is left")


def test_a_target_whose_dry_run_fails_is_skipped_with_a_warning(no_docker: dict[str, str]) -> None:
    # local_docker restarts containers one by one: APPLICATION retries of 2 replicas are refused at its dry run
    args = ["utils.sh", "--num_replicas", "2", "--max_retries", "1", "--", "true"]
    run = run_cli("run", "-s", "managed", "-cfg", "targets=local_docker;local_cwd", *args, env=no_docker)
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    warning = [line for line in run.stderr.splitlines() if "skipping target local_docker" in line]
    assert len(warning) == 1 and "its dry run failed: role" in warning[0], run.stderr
    eventually(lambda: status(handle, no_docker)["state"] == "SUCCEEDED", timeout=60, what="the job succeeds")
    attempts = status(handle, no_docker)["attempts"]
    assert isinstance(attempts, list)
    assert [(a["scheduler"], a["state"]) for a in attempts] == [("local_cwd", "SUCCEEDED")]
    described = run_cli("describe", "--json", handle, env=no_docker)
    skipped = json.loads(described.stdout)["metadata"]["skipped"]
    assert list(skipped) == ["local_docker"] and skipped["local_docker"].startswith("role"), skipped
    job_id = handle.rsplit("/", 1)[1]
    eventually(lambda: processes_naming(job_id) == [], timeout=30, what="no process of the job is left")


def test_no_target_can_take_the_job_is_one_line_naming_each(no_docker: dict[str, str]) -> None:
    args = ["utils.sh", "--num_replicas", "20000", "--", "true"]  # more than the local schedulers start
    run = run_cli("run", "-s", "managed", "-cfg", "targets=local_docker;local_cwd", *args, env=no_docker)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchx: error: managed: no target can run this job here:"), lines
    assert re.search(r"here: local_docker: app '[^']+' asks for 20000 replicas; local_docker starts at most", lines[0])
    assert re.search(r"; local_cwd: app '[^']+' asks for 20000 replicas; local_cwd starts at most", lines[0])
    assert ManagedStore().job_ids() == []


def test_a_wrong_option_of_a_target_is_refused_not_skipped(no_docker: dict[str, str]) -> None:
    run = run_cli(
        "run",
        "-s",
        "managed",
        "-cfg",
        "targets=local_docker;local_cwd,stop_grace_period=-1",
        "utils.echo",
        env=no_docker,
    )
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchx: error: managed target local_docker:"), lines
    assert ManagedStore().job_ids() == []
