"""The ``kubernetes`` scheduler submits what TorchX 0.7 submits: one Volcano Job
(``batch.volcano.sh/v1alpha1``) whose ``queue`` is the Volcano queue, ``max_retries`` as Volcano
policies. Plain batch Jobs (Kueue) stay available with ``-cfg mode=jobs`` and are the default on
a cluster without Volcano's CRD."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from torchx.testing import live_backend_env, run_torchx

pytest.importorskip("torchx_sched_k8s")
pytest.importorskip("torchx_components")


def dryrun_docs(*args: str, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    proc = run_torchx("run", "--dryrun", "--workspace", "", "-s", "kubernetes", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def no_cluster(tmp: Path) -> dict[str, str]:
    return {"KUBECONFIG": str(tmp / "no-kubeconfig"), "KUBERNETES_SERVICE_HOST": ""}


def test_runopts_say_volcano_is_the_default_where_installed() -> None:
    proc = run_torchx("runopts", "kubernetes")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "mode (str, default: auto)" in text
    assert "volcano" in text and "Volcano queue" in text


def test_dryrun_is_a_volcano_job_as_torchx(isolated: Path) -> None:
    (job,) = dryrun_docs(
        "-cfg", "queue=research", "utils.sh", "--num_replicas", "2", "--", "true", env=no_cluster(isolated)
    )
    assert job["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert job["kind"] == "Job"
    spec = job["spec"]
    assert isinstance(spec, dict)
    assert spec["schedulerName"] == "volcano"
    assert spec["queue"] == "research"
    assert spec["maxRetry"] == 0
    assert len(spec["tasks"]) == 2
    assert all("policies" not in t for t in spec["tasks"])  # max_retries=0: nothing restarts


def test_max_retries_become_volcano_policies(isolated: Path) -> None:
    (job,) = dryrun_docs(
        "-cfg",
        "queue=q",
        "dist.ddp",
        "--max_retries",
        "3",
        "-j",
        "1x2",
        "--script",
        "train.py",
        env=no_cluster(isolated),
    )
    spec = job["spec"]
    assert isinstance(spec, dict)
    assert spec["maxRetry"] == 3
    (task,) = spec["tasks"]
    assert task["maxRetry"] == 3
    assert {"event": "PodFailed", "action": "RestartJob"} in task["policies"]


def test_plain_jobs_when_asked(isolated: Path) -> None:
    docs = dryrun_docs("-cfg", "mode=jobs;queue=team-q", "utils.echo", env=no_cluster(isolated))
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [("v1", "Service"), ("batch/v1", "Job")]
    meta = docs[1]["metadata"]
    assert isinstance(meta, dict)
    assert meta["labels"]["kueue.x-k8s.io/queue-name"] == "team-q"


@pytest.mark.k8s
def test_live_cluster_with_volcano_crd_gets_a_volcano_job() -> None:
    """The test cluster serves Volcano's CRDs (scripts/backends/k8s-up.sh): no ``mode`` means Volcano."""
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    (job,) = dryrun_docs("-cfg", "queue=default", "utils.echo", env={"KUBECONFIG": env["KUBECONFIG"]})
    assert job["apiVersion"] == "batch.volcano.sh/v1alpha1"
