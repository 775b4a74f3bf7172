"""Recovery inside Kubernetes: the Job a managed job compiles to, its attempt wrapper under a
real ``sh``, and its attempts read back from pods as the API server returns them (pure)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.api import UnsupportedFeatureError
from torchx.schedulers.recovery import RecoveryPolicy
from torchx_sched_k8s import names, recovery
from torchx_sched_k8s.opts import KubernetesOpts
from torchx_sched_k8s.request import build_jobs, build_volcano

CKPT = "/mnt/ckpt/run"


def app(num_replicas: int = 1, mounts: list[Any] | None = None, roles: int = 1) -> specs.AppDef:
    role = specs.Role(
        "train",
        image="img",
        entrypoint="python3",
        args=["train.py", "--lr", "$$1"],
        num_replicas=num_replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
        mounts=[specs.BindMount(src_path="/data/ckpt", dst_path="/mnt/ckpt")] if mounts is None else mounts,
    )
    return specs.AppDef("train", [role] * roles)


def compiled(policy: RecoveryPolicy, minor: int | None = 20, a: specs.AppDef | None = None) -> dict[str, Any]:
    a = a or app()
    request = build_jobs(a, KubernetesOpts(namespace="ns"))
    ckpt = recovery.check(a, request, policy)
    out = recovery.compile_request(request, policy, ckpt, minor)
    assert out.kind == "jobs" and out.app_id == request.app_id
    job: dict[str, Any] = next(o for o in out.objects if o["kind"] == "Job")
    return job


def test_old_servers_count_every_failed_pod_in_one_backoff_limit() -> None:
    job = compiled(RecoveryPolicy(max_restarts=2, max_recoveries=3, recover_on_exit_codes=(33,), checkpoint_dir=CKPT))
    assert job["spec"]["backoffLimit"] == 5
    assert "podFailurePolicy" not in job["spec"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    ann = job["metadata"]["annotations"]
    assert recovery.ANNOTATION_RECOVERY in ann
    assert recovery.ANNOTATION_RECOVERY in job["spec"]["template"]["metadata"]["annotations"]
    # describe must leave the retries to the Job controller (no torchx-side APPLICATION restart)
    assert ann[names.ANNOTATION_RETRY_POLICY] == "REPLICA"


def test_servers_with_pod_failure_policy_ignore_disruptions_and_recover_codes() -> None:
    policy = RecoveryPolicy(max_restarts=2, max_recoveries=3, recover_on_exit_codes=(0, 33, 7), checkpoint_dir=CKPT)
    job = compiled(policy, minor=27)
    assert job["spec"]["backoffLimit"] == 2
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert job["spec"]["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "Ignore", "onExitCodes": {"containerName": container["name"], "operator": "In", "values": [7, 33]}},
    ]


def test_the_container_runs_the_app_behind_the_wrapper_with_the_checkpoint_dir() -> None:
    job = compiled(RecoveryPolicy(checkpoint_dir=CKPT))
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert c["command"][:2] == ["sh", "-c"]
    plain = next(o for o in build_jobs(app(), KubernetesOpts(namespace="ns")).objects if o["kind"] == "Job")
    # the app's whole argv (one command, as TorchX's pods), as escaped for the kubelet
    assert c["command"][3:] == ["torchx-attempt", *plain["spec"]["template"]["spec"]["containers"][0]["command"]]
    assert c["command"][4] == "python3" and "args" not in c
    assert {"name": "TORCHX_CHECKPOINT_DIR", "value": CKPT} in c["env"]
    # the kubelet turns "$$" into "$": every "$" of the wrapper is doubled
    assert c["command"][2] == recovery.WRAPPER.replace("$", "$$")


def test_compiling_leaves_the_plain_request_untouched() -> None:
    a = app()
    request = build_jobs(a, KubernetesOpts(namespace="ns"))
    before = repr(request.objects)
    recovery.compile_request(request, RecoveryPolicy(checkpoint_dir=CKPT), CKPT, 20)
    assert repr(request.objects) == before


@pytest.mark.parametrize(
    ("a", "policy", "words"),
    [
        (app(num_replicas=2), RecoveryPolicy(checkpoint_dir=CKPT), "one replica"),
        (app(roles=2), RecoveryPolicy(checkpoint_dir=CKPT), "one replica"),
        (app(), RecoveryPolicy(), "checkpoint_dir=ABSOLUTE_PATH"),
        (app(), RecoveryPolicy(checkpoint_dir="rel/dir"), "checkpoint_dir=ABSOLUTE_PATH"),
        (app(), RecoveryPolicy(checkpoint_dir="/mnt/ckptx"), "on no writable mount"),
        (app(mounts=[]), RecoveryPolicy(checkpoint_dir=CKPT), "on no writable mount"),
        (
            app(mounts=[specs.BindMount(src_path="/d", dst_path="/mnt", read_only=True)]),
            RecoveryPolicy(checkpoint_dir=CKPT),
            "on no writable mount",
        ),
    ],
)
def test_what_cannot_recover_in_kubernetes_is_refused_in_one_line(
    a: specs.AppDef, policy: RecoveryPolicy, words: str
) -> None:
    with pytest.raises(UnsupportedFeatureError, match=words) as e:
        recovery.check(a, build_jobs(a, KubernetesOpts(namespace="ns")), policy)
    assert "\n" not in str(e.value) and "controller=local" in str(e.value)


def test_volcano_mode_is_refused() -> None:
    a = app()
    with pytest.raises(UnsupportedFeatureError, match="mode=jobs"):
        recovery.check(a, build_volcano(a, KubernetesOpts(namespace="ns")), RecoveryPolicy(checkpoint_dir=CKPT))


def test_a_volume_mount_above_the_checkpoint_dir_is_enough() -> None:
    a = app(mounts=[specs.VolumeMount(src="pvc", dst_path="/mnt")])
    assert recovery.check(a, build_jobs(a, KubernetesOpts(namespace="ns")), RecoveryPolicy(checkpoint_dir=CKPT)) == CKPT


# ---------------------------------------------------------------- the wrapper under a real sh


def wrapped(ckpt: Path, *app: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TORCHX_CHECKPOINT_DIR": str(ckpt)}
    return subprocess.Popen(
        ["sh", "-c", recovery.WRAPPER, "torchx-attempt", *app],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_each_attempt_gets_the_next_number_and_says_it_first(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"  # made by the first attempt
    for n in range(3):
        proc = wrapped(ckpt, "sh", "-c", 'echo "attempt=$TORCHX_ATTEMPT"; exit 3')
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 3  # the app's exit code is the pod's
        assert out == f"attempt={n}\n"
        assert recovery.attempt_number(err.splitlines()[0]) == n
    assert (ckpt / recovery.COUNTER).read_text() == "3\n"


def test_a_torn_counter_restarts_from_zero_rather_than_fail(tmp_path: Path) -> None:
    (tmp_path / recovery.COUNTER).write_text("garbage")
    proc = wrapped(tmp_path, "sh", "-c", 'echo "$TORCHX_ATTEMPT"')
    assert proc.communicate(timeout=10)[0] == "0\n"


def test_the_next_attempt_waits_for_the_one_before_to_end(tmp_path: Path) -> None:
    if subprocess.run(["sh", "-c", "command -v flock"], capture_output=True).returncode != 0:
        pytest.skip("flock (util-linux) is not installed")
    first = wrapped(tmp_path, "sleep", "30")
    deadline = time.monotonic() + 10
    while not (tmp_path / recovery.COUNTER).exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = wrapped(tmp_path, "sh", "-c", 'echo "$TORCHX_ATTEMPT"')
    time.sleep(1)
    assert second.poll() is None, "attempt 1 ran while attempt 0 still held the checkpoint directory"
    first.kill()  # as the kubelet ends a deleted pod: the app holds the lock until it dies
    first.wait()
    assert second.communicate(timeout=10)[0] == "1\n"


# ---------------------------------------------------------------- attempts from pods


def pod(name: str, created: str, phase: str, state: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": created, **meta},
        "status": {"phase": phase, "containerStatuses": [{"state": state or {}}] if state else []},
    }


def ended(code: int, reason: str = "Error") -> dict[str, Any]:
    return {
        "terminated": {
            "exitCode": code,
            "reason": reason,
            "startedAt": "2026-01-01T00:00:01Z",
            "finishedAt": "2026-01-01T00:00:09Z",
        }
    }


def job(*conditions: str, **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "annotations": annotations},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }


def test_each_pod_is_an_attempt_with_its_cause() -> None:
    pods = [
        pod("c", "2026-01-01T00:02:00Z", "Succeeded", ended(0, "Completed")),
        pod("a", "2026-01-01T00:00:00Z", "Failed", ended(137)),
        pod("b", "2026-01-01T00:01:00Z", "Failed", ended(1)),
    ]
    log = recovery.attempts(job("Complete"), pods, {"a": 0, "b": 1, "c": 2})
    assert [(a.n, a.state, a.cause, a.exit_code) for a in log.attempts] == [
        (0, "FAILED", "KILLED", 137),
        (1, "FAILED", "APP_ERROR", 1),
        (2, "SUCCEEDED", None, 0),
    ]
    assert log.final == "SUCCEEDED"
    assert log.attempts[0].started == 1767225601.0 and log.attempts[0].ended == 1767225609.0


def test_an_attempt_whose_pod_was_deleted_reads_as_ended_from_outside() -> None:
    pods = [pod("b", "2026-01-01T00:01:00Z", "Running", {"running": {"startedAt": "2026-01-01T00:01:01Z"}})]
    log = recovery.attempts(job(), pods, {"b": 1})
    assert [(a.n, a.state, a.cause) for a in log.attempts] == [(0, "FAILED", "KILLED"), (1, None, None)]
    assert "deleted" in log.attempts[0].reason
    assert log.final is None


def test_a_disruption_reads_from_the_pod_condition() -> None:
    p = pod("a", "2026-01-01T00:00:00Z", "Failed", ended(143))
    p["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]
    log = recovery.attempts(job(), [p, pod("b", "2026-01-01T00:01:00Z", "Pending")], {"a": 0})
    assert [(a.n, a.state, a.cause) for a in log.attempts] == [(0, "FAILED", "PREEMPTED"), (1, None, None)]


def test_cancel_names_the_attempt_whose_pod_it_deleted() -> None:
    pods = [pod("a", "2026-01-01T00:00:00Z", "Failed", ended(1))]
    cancelled = job(**{names.ANNOTATION_CANCELLED: "now", recovery.ANNOTATION_CANCELLED_ATTEMPT: "1"})
    log = recovery.attempts(cancelled, pods, {"a": 0})
    assert [(a.n, a.state, a.cause) for a in log.attempts] == [
        (0, "FAILED", "APP_ERROR"),
        (1, "CANCELLED", "CANCELLED"),
    ]
    # its pod still terminating: the same attempt, once
    pods.append(pod("b", "2026-01-01T00:01:00Z", "Failed", ended(137), deletionTimestamp="2026-01-01T00:02:00Z"))
    log = recovery.attempts(cancelled, pods, {"a": 0, "b": 1})
    assert [(a.n, a.state) for a in log.attempts] == [(0, "FAILED"), (1, "CANCELLED")]


def test_describe_shows_the_app_not_the_wrapper() -> None:
    from torchx_sched_k8s import status

    view = status.view_jobs([compiled(RecoveryPolicy(checkpoint_dir=CKPT))], [])
    assert view is not None
    role = view.role_defs[0]
    assert (role.entrypoint, role.args) == ("python3", ["train.py", "--lr", "$1"])
