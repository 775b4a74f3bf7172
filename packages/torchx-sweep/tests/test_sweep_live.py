"""A 2x2 grid with hostile arguments on the live backends: Slurm, LSF (OpenLava) and AWS Batch
(moto) as one native job array each, Kubernetes through the driver (markers ``slurm``, ``lsf``,
``aws``, ``k8s``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.runner import Runner, get_runner
from torchx.schedulers.streams import Stream
from torchx.testing import live_backend_env, unavailable, unique_name
from torchx_sweep import Sweep, run_sweep
from torchx_sweep.store import SweepStore

GRID = {"a": ["it's two  words", "$(touch pwned) `id`"], "b": ['say "hi"; $HOME', "back\\slash €"]}
EXPECTED = {
    0: [GRID["a"][0], GRID["b"][0]],
    1: [GRID["a"][0], GRID["b"][1]],
    2: [GRID["a"][1], GRID["b"][0]],
    3: [GRID["a"][1], GRID["b"][1]],
}


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("sweeplive") as r:
        yield r


def printed(runner: Runner, sweep: Sweep, stream: Stream | None = None) -> dict[int, Any]:
    out = {}
    for t in sweep.trials():
        text = "".join(runner.log_lines(str(t.handle), "argv", 0, streams=stream))
        out[t.index] = json.loads(text.strip().splitlines()[-1])
    return out


def cancel_once_running(sweep: Sweep, timeout: float) -> dict[str, Any]:
    """Cancels ``sweep`` once one of its trials runs (fails after ``timeout`` s without one) and
    returns its status after the cancel took effect."""
    deadline = time.monotonic() + timeout
    while not any(t.state == "RUNNING" for t in sweep.trials()):
        assert time.monotonic() < deadline, sweep.status()
        time.sleep(0.2)
    sweep.cancel()
    return sweep.wait(timeout=timeout)


@pytest.mark.slurm
def test_slurm_grid_is_one_throttled_array(runner: Runner, components: str, slurm_cfg: dict[str, str]) -> None:
    sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "2"], GRID, "slurm", slurm_cfg, max_parallel=2)
    spec = SweepStore().load(sweep.sweep_id).spec
    assert spec["mode"] == "array"
    array_id = spec["array_handle"].rsplit("/", 1)[-1]
    assert array_id.isdigit()
    handles = [t.handle for t in sweep.trials()]
    assert handles == [f"slurm://sweeplive/{array_id}_{i}" for i in range(4)]  # one sbatch, four elements
    shown = subprocess.run(["scontrol", "show", "job", array_id], capture_output=True, text=True).stdout
    assert "ArrayTaskThrottle=2" in shown, shown
    most = 0
    deadline = time.monotonic() + 180
    while sweep.status()["state"] == "RUNNING":
        assert time.monotonic() < deadline, sweep.status()
        running = subprocess.run(
            ["squeue", "-h", "-r", "-j", array_id, "-t", "RUNNING", "-o", "%i"], capture_output=True, text=True
        ).stdout.split()
        most = max(most, len(running))
        time.sleep(0.2)
    assert 1 <= most <= 2
    status = sweep.wait(timeout=60)
    assert status["state"] == "SUCCEEDED", status
    assert printed(runner, sweep, Stream.STDOUT) == EXPECTED
    assert not any(os.path.exists(os.path.join(d, "pwned")) for d in (slurm_cfg["job_dir"], os.getcwd()))


@pytest.mark.aws
def test_aws_batch_grid_is_one_array_job(runner: Runner, components: str, aws_env: dict[str, str]) -> None:
    import boto3

    queue = aws_env.get("TORCHX_TEST_AWS_BATCH_QUEUE") or "torchx"
    image = aws_env.get("TORCHX_TEST_AWS_IMAGE") or "localhost/torchx-python:bookworm"
    sweep = run_sweep(runner, f"{components}:argv", ["--image", image], GRID, "aws_batch", {"queue": queue})
    spec = SweepStore().load(sweep.sweep_id).spec
    assert spec["mode"] == "array"
    array_app_id = spec["array_handle"].split("/", 3)[-1]
    assert [t.handle for t in sweep.trials()] == [f"aws_batch://sweeplive/{array_app_id}[{i}]" for i in range(4)]
    name = array_app_id.split(":", 1)[1]
    batch = boto3.client("batch")
    jobs = [
        s
        for s in batch.list_jobs(jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}])["jobSummaryList"]
        if ":" not in s["jobId"]
    ]
    assert len(jobs) == 1  # one submission
    parent = batch.describe_jobs(jobs=[jobs[0]["jobId"]])["jobs"][0]
    assert parent["arrayProperties"]["size"] == 4
    status = sweep.wait(timeout=240)
    assert status["state"] == "SUCCEEDED", status
    assert printed(runner, sweep) == EXPECTED


@pytest.fixture
def k8s_namespace() -> Iterator[dict[str, Any]]:
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    if not env.get("KUBECONFIG") or env.get("TORCHX_TEST_K8S_KUBELET", "none") == "none":
        unavailable("no Kubernetes cluster with a kubelet: run scripts/backends/services.sh up k8s")
    mp = pytest.MonkeyPatch()
    mp.setenv("KUBECONFIG", env["KUBECONFIG"])
    from kubernetes import client, config

    api = client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration)
    core = client.CoreV1Api(api)
    namespace = unique_name("torchx-sweep")
    core.create_namespace({"metadata": {"name": namespace}})
    deadline = time.monotonic() + 30
    while not core.list_namespaced_service_account(namespace).items and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        yield {"namespace": namespace, "image": env.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm")}
    finally:
        core.delete_namespace(namespace)
        api.close()
        mp.undo()


@pytest.mark.k8s
def test_kubernetes_grid_through_the_driver(runner: Runner, components: str, k8s_namespace: dict[str, Any]) -> None:
    cfg = {
        "namespace": k8s_namespace["namespace"],
        "image_pull_policy": "IfNotPresent",
        "termination_grace_period": 1,
        "mode": "jobs",  # the test cluster has Volcano's CRDs but no Volcano controller: nothing would run
    }
    sweep = run_sweep(
        runner, f"{components}:argv", ["--image", k8s_namespace["image"]], GRID, "kubernetes", cfg, max_parallel=2
    )
    assert sweep.mode == "driver"
    status = sweep.wait(timeout=300)
    assert status["state"] == "SUCCEEDED", status
    assert printed(runner, sweep) == EXPECTED


@pytest.mark.slurm
def test_slurm_cancel_stops_the_whole_array(runner: Runner, components: str, slurm_cfg: dict[str, str]) -> None:
    trials = [{"a": str(i), "b": "x"} for i in range(4)]
    sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "120"], trials, "slurm", slurm_cfg, max_parallel=1)
    status = cancel_once_running(sweep, timeout=60)
    assert status["state"] == "CANCELLED", status["trials"]
    assert [t["state"] for t in status["trials"]] == ["CANCELLED"] * 4


@pytest.mark.slurm
def test_slurm_fail_fast_keeps_the_array_and_cancels_it(
    runner: Runner, components: str, slurm_cfg: dict[str, str]
) -> None:
    """--fail-fast on Slurm is still one sbatch --array; a driver watches it and cancels the array at the failure."""
    trials = [{"a": "fail", "b": "0", "sleep": "1"}] + [{"a": "ok", "b": str(i), "sleep": "60"} for i in range(1, 4)]
    sweep = run_sweep(runner, f"{components}:argv", [], trials, "slurm", slurm_cfg, max_parallel=2, fail_fast=True)
    spec = SweepStore().load(sweep.sweep_id).spec
    assert sweep.mode == "array"
    assert spec["array_handle"]
    started = time.monotonic()
    status = sweep.wait(timeout=120)
    assert time.monotonic() - started < 60  # not the 60 s the others sleep: they were cancelled
    assert status["state"] == "FAILED", status
    assert status["driver"] == "finished", status
    assert [t["state"] for t in status["trials"]] == ["FAILED", "CANCELLED", "CANCELLED", "CANCELLED"]
    array_id = spec["array_handle"].rsplit("/", 1)[-1]
    left = subprocess.run(["squeue", "-h", "-r", "-j", array_id, "-o", "%i %T"], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout  # nothing of the array is queued or running


@pytest.mark.aws
def test_aws_batch_cancel_stops_every_element(runner: Runner, components: str, aws_env: dict[str, str]) -> None:
    queue = aws_env.get("TORCHX_TEST_AWS_BATCH_QUEUE") or "torchx"
    image = aws_env.get("TORCHX_TEST_AWS_IMAGE") or "localhost/torchx-python:bookworm"
    trials = [{"a": str(i), "b": "x"} for i in range(3)]
    sweep = run_sweep(
        runner, f"{components}:argv", ["--image", image, "--sleep", "120"], trials, "aws_batch", {"queue": queue}
    )
    status = cancel_once_running(sweep, timeout=120)
    assert status["state"] == "CANCELLED", status["trials"]
    assert [t["state"] for t in status["trials"]] == ["CANCELLED"] * 3


#: GRID with a newline in a value too (LSF's script carries it inside a quoted word)
LSF_GRID = {"a": ["it's two  words\nline 2", "$(touch pwned) `id`"], "b": GRID["b"]}


def lsf_elements(array_id: str) -> list[tuple[str, str]]:
    """(element id, LSF state) of every element of the array, from ``bjobs``."""
    out = subprocess.run(["bjobs", "-a", "-w", array_id], capture_output=True, text=True, timeout=30).stdout
    rows = [row.split() for row in out.splitlines()[1:]]  # JOBID USER STAT ... JOB_NAME[index] ...
    return [
        (f"{array_id}[{name.rsplit('[', 1)[1]}", row[2])
        for row in rows
        if row and row[0] == array_id
        for name in row[3:]
        if name.endswith("]") and "[" in name
    ]


@pytest.mark.lsf
def test_lsf_grid_is_one_throttled_array(
    runner: Runner, components: str, lsf_cfg: dict[str, str], bsub_log: Path, isolated: Path
) -> None:
    sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "1"], LSF_GRID, "lsf", lsf_cfg, max_parallel=1)
    spec = SweepStore().load(sweep.sweep_id).spec
    assert spec["mode"] == "array"
    array_id = spec["array_handle"].rsplit("/", 1)[-1]
    assert array_id.isdigit()
    assert [t.handle for t in sweep.trials()] == [f"lsf://sweeplive/{array_id}[{i}]" for i in range(1, 5)]
    assert len(bsub_log.read_text().splitlines()) == 1  # one submission for the four trials
    summary = subprocess.run(["bjobs", "-A", "-w", array_id], capture_output=True, text=True, timeout=30).stdout
    assert "[1-4]%1 " in summary, summary  # LSF holds the throttle
    most = 0
    deadline = time.monotonic() + 180
    while sweep.status()["state"] in ("RUNNING", "PENDING"):
        assert time.monotonic() < deadline, sweep.status()
        most = max(most, sum(st == "RUN" for _, st in lsf_elements(array_id)))
        time.sleep(0.2)
    assert most == 1  # the host has two slots: only the throttle keeps it at one
    status = sweep.wait(timeout=60)
    assert status["state"] == "SUCCEEDED", status
    expected = {i: [LSF_GRID["a"][i // 2], LSF_GRID["b"][i % 2]] for i in range(4)}
    assert printed(runner, sweep, Stream.STDOUT) == expected
    assert not any(os.path.exists(os.path.join(d, "pwned")) for d in (lsf_cfg["job_dir"], os.getcwd()))
    cli = subprocess.run(
        [sys.executable, "-m", "torchx.cli.main", "sweep", "status", sweep.handle, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    shown = json.loads(cli.stdout)
    assert (shown["handle"], shown["state"], shown["mode"]) == (sweep.handle, "SUCCEEDED", "array")
    assert [(t["index"], t["args"], t["state"], t["handle"]) for t in shown["trials"]] == [
        (i, {"a": expected[i][0], "b": expected[i][1]}, "SUCCEEDED", f"lsf://sweeplive/{array_id}[{i + 1}]")
        for i in range(4)
    ]


@pytest.mark.lsf
def test_lsf_cancel_stops_every_element(runner: Runner, components: str, lsf_cfg: dict[str, str]) -> None:
    mark = f"cancel-{uuid.uuid4().hex[:8]}"
    trials = [{"a": str(i), "b": mark} for i in range(4)]
    sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "120"], trials, "lsf", lsf_cfg, max_parallel=2)
    status = cancel_once_running(sweep, timeout=60)
    assert status["state"] == "CANCELLED", status["trials"]
    assert [t["state"] for t in status["trials"]] == ["CANCELLED"] * 4
    array_id = str(SweepStore().load(sweep.sweep_id).spec["array_handle"]).rsplit("/", 1)[-1]
    assert {st for _, st in lsf_elements(array_id)} == {"EXIT"}  # none left running or waiting
    deadline = time.monotonic() + 15
    while subprocess.run(["pgrep", "-f", mark], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "a trial's process outlived the cancel"
        time.sleep(0.2)


@pytest.mark.aws
def test_aws_batch_fail_fast_keeps_the_array_and_cancels_it(
    runner: Runner, components: str, aws_env: dict[str, str]
) -> None:
    queue = aws_env.get("TORCHX_TEST_AWS_BATCH_QUEUE") or "torchx"
    image = aws_env.get("TORCHX_TEST_AWS_IMAGE") or "localhost/torchx-python:bookworm"
    trials = [
        {"a": "fail", "b": "0", "sleep": "1"},
        {"a": "ok", "b": "1", "sleep": "120"},
        {"a": "ok", "b": "2", "sleep": "120"},
    ]
    sweep = run_sweep(
        runner,
        f"{components}:argv",
        ["--image", image],
        trials,
        "aws_batch",
        {"queue": queue},
        fail_fast=True,
    )
    assert sweep.mode == "array"
    status = sweep.wait(timeout=200)
    assert status["state"] == "FAILED", status
    assert status["driver"] == "finished", status
    assert [t["state"] for t in status["trials"]] == ["FAILED", "CANCELLED", "CANCELLED"]


@pytest.mark.lsf
def test_lsf_fail_fast_keeps_the_array_and_cancels_it(runner: Runner, components: str, lsf_cfg: dict[str, str]) -> None:
    trials = [{"a": "fail", "b": "0", "sleep": "1"}] + [{"a": "ok", "b": str(i), "sleep": "60"} for i in range(1, 4)]
    sweep = run_sweep(runner, f"{components}:argv", [], trials, "lsf", lsf_cfg, max_parallel=2, fail_fast=True)
    assert sweep.mode == "array"
    started = time.monotonic()
    status = sweep.wait(timeout=120)
    assert time.monotonic() - started < 60  # the others were cancelled, not waited for
    assert status["state"] == "FAILED", status
    assert status["driver"] == "finished", status
    assert [t["state"] for t in status["trials"]] == ["FAILED", "CANCELLED", "CANCELLED", "CANCELLED"]
    array_id = str(SweepStore().load(sweep.sweep_id).spec["array_handle"]).rsplit("/", 1)[-1]
    assert {st for _, st in lsf_elements(array_id)} == {"EXIT"}  # none left running or waiting
