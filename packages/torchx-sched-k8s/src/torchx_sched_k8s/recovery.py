"""Recovery inside Kubernetes (``capabilities.recovery``): a managed job compiled into one
batch/v1 Job that the Job controller itself runs again, so nothing of torchx's runs outside
the cluster (pure: request building and reading attempts back from the API's objects).

* **Every attempt is a pod.** The Job runs its one replica with ``restartPolicy: Never``; a
  failed pod (the application's exit code, a container killed on its node) is replaced by
  the Job controller, after its own back-off (10 s, doubled per failure, at most 6 min),
  until ``backoffLimit`` failures were counted.
* **Budgets.** Servers from 1.26 on (``podFailurePolicy``): ``backoffLimit = max_restarts``;
  a pod with the ``DisruptionTarget`` condition (evicted, preempted, its node drained or
  lost) and an exit code of ``recover_on_exit_codes`` are ``Ignore``'d (not counted).
  Older servers cannot tell failures apart: ``backoffLimit = max_restarts + max_recoveries``
  counts every failed pod alike; an exit code of ``recover_on_exit_codes`` counts too. On
  every server a pod deleted through the API (an eviction) is replaced uncounted.
* **TORCHX_ATTEMPT.** A few lines of ``sh`` in front of the app's command keep a counter,
  :data:`COUNTER`, in ``TORCHX_CHECKPOINT_DIR`` (storage every pod of the job mounts: a
  hostPath or PVC mount of the role), export its value as ``TORCHX_ATTEMPT``, increase it
  and print ``torchx: attempt N`` as the pod's first log line, then ``exec`` the app. The
  downward API cannot give the pod's retry number on these servers (Indexed Jobs are 1.21,
  ``batch.kubernetes.io/job-index-failure-count`` 1.28), and the counter also counts pods
  that left no record.
* **Attempts** are the Job's pods, oldest first, numbered by their first log line; an
  attempt number no pod has left any more (its pod was deleted) reads as ended from outside.
"""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime, timezone
from typing import Any

from torchx.schedulers.api import UnsupportedFeatureError
from torchx.schedulers.causes import EndCause
from torchx.schedulers.recovery import AttemptLog, RecoveredAttempt, RecoveryPolicy
from torchx.specs.mounts import BindMount, VolumeMount
from torchx.specs.roles import AppDef, RetryPolicy

from torchx_sched_k8s import causes, names, status
from torchx_sched_k8s.request import KIND_JOBS, KubernetesRequest

#: the Job and pod annotation of a job that recovers in Kubernetes: its policy, as JSON
ANNOTATION_RECOVERY = names.PREFIX + "recovery"
#: the attempt counter's file in ``TORCHX_CHECKPOINT_DIR``
COUNTER = ".torchx-attempt"
#: the first server minor version whose Jobs take ``podFailurePolicy`` (on by default)
POD_FAILURE_POLICY_MINOR = 26
#: the pod's first log line, written by :data:`WRAPPER`
ATTEMPT_LINE = re.compile(r"torchx: attempt (\d+)")

#: the lock file in ``TORCHX_CHECKPOINT_DIR`` an attempt holds while it runs
LOCK = ".torchx-attempt.lock"
#: set by cancel on a recovering Job: the attempt that ran then
ANNOTATION_CANCELLED_ATTEMPT = names.PREFIX + "cancelled-attempt"

#: ``sh -c WRAPPER torchx-attempt APP ARGS...``: waits for the attempt before to end (the lock,
#: with ``flock`` where the image has it: the Job controller starts the replacement of a deleted
#: pod while that one still terminates), bumps the counter, then runs the app as the pod's main
#: process, which keeps the lock (a failure to write the counter fails the attempt rather than
#: repeat a number)
WRAPPER = (
    'd="$TORCHX_CHECKPOINT_DIR"; f="$d/' + COUNTER + '"; mkdir -p -- "$d" || exit 1; '
    'exec 9>>"$d/' + LOCK + '" || exit 1; if command -v flock >/dev/null 2>&1; then flock 9 || exit 1; fi; '
    'n=$(cat -- "$f" 2>/dev/null); case "$n" in ""|*[!0-9]*) n=0;; esac; '
    'echo "$((n + 1))" > "$f.$$" && mv -f -- "$f.$$" "$f" || exit 1; '
    'export TORCHX_ATTEMPT="$n"; echo "torchx: attempt $n" >&2; exec "$@"'
)


def _inside(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def check(app: AppDef, request: KubernetesRequest, policy: RecoveryPolicy) -> str:
    """The checkpoint directory of a job that can recover in Kubernetes.

    Raises:
        UnsupportedFeatureError: the request, app or policy cannot be expressed (one line: what
            to change, or ``controller=local``)
    """
    local = "; or use controller=local (a driver on this machine)"
    if request.kind != KIND_JOBS:
        raise UnsupportedFeatureError(
            f"kubernetes: recovery inside the cluster runs plain Jobs; this run uses mode={request.kind}:"
            f" pass mode=jobs{local}"
        )
    if len(app.roles) != 1 or app.roles[0].num_replicas != 1:
        raise UnsupportedFeatureError(
            "kubernetes: recovery inside the cluster runs apps of one replica (the Job controller"
            f" retries each replica's Job apart, not the app as a whole){local}"
        )
    ckpt = policy.checkpoint_dir
    if not ckpt or not ckpt.startswith("/"):
        raise UnsupportedFeatureError(
            "kubernetes: recovery inside the cluster needs checkpoint_dir=ABSOLUTE_PATH on a volume every"
            f" attempt's pod mounts (a bind or volume mount of the role){local}"
        )
    mounts = [m for m in app.roles[0].mounts if isinstance(m, BindMount | VolumeMount) and not m.read_only]
    if not any(_inside(ckpt, m.dst_path) for m in mounts):
        raise UnsupportedFeatureError(
            f"kubernetes: checkpoint_dir={ckpt} is on no writable mount of role {app.roles[0].name!r}: a pod's"
            f" own filesystem ends with it; mount a hostPath or PVC at or above it{local}"
        )
    return ckpt


def _escaped(value: str) -> str:
    """``value`` as the kubelet passes it on (it reads ``$(VAR)`` in command, args and env)."""
    return value.replace("$", "$$")


def compile_request(
    request: KubernetesRequest, policy: RecoveryPolicy, checkpoint_dir: str, server_minor: int | None
) -> KubernetesRequest:
    """``request`` (a ``jobs`` request of one replica, :func:`check`'d) as a Job that recovers
    by ``policy`` (see the module's doc); ``server_minor`` picks the budget's form."""
    objects = copy.deepcopy(request.objects)  # replicas share sub-dicts: edit a copy
    job = next(o for o in objects if o["kind"] == "Job")
    spec, template = job["spec"], job["spec"]["template"]
    container = template["spec"]["containers"][0]
    container["command"] = ["sh", "-c", _escaped(WRAPPER), status.ATTEMPT_WRAPPER, *container.get("command", [])]
    env = [e for e in container.get("env", []) if e.get("name") not in ("TORCHX_ATTEMPT", "TORCHX_CHECKPOINT_DIR")]
    container["env"] = [*env, {"name": "TORCHX_CHECKPOINT_DIR", "value": _escaped(checkpoint_dir)}]
    codes = sorted({c for c in policy.recover_on_exit_codes if c != 0})
    if server_minor is not None and server_minor >= POD_FAILURE_POLICY_MINOR:
        rules: list[dict[str, Any]] = [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
        if codes:
            rules.append(
                {
                    "action": "Ignore",
                    "onExitCodes": {"containerName": container["name"], "operator": "In", "values": codes},
                }
            )
        spec["podFailurePolicy"] = {"rules": rules}
        spec["backoffLimit"] = policy.max_restarts
    else:
        spec["backoffLimit"] = policy.max_restarts + policy.max_recoveries
    shown = json.dumps(
        {
            "max_restarts": policy.max_restarts,
            "max_recoveries": policy.max_recoveries,
            "recover_on_exit_codes": codes,
            "checkpoint_dir": checkpoint_dir,
            "backoffLimit": spec["backoffLimit"],
        },
        sort_keys=True,
    )
    # the Job controller retries the replica: describe must not restart the app itself (APPLICATION)
    retries = {
        names.ANNOTATION_RETRY_POLICY: RetryPolicy.REPLICA.value,
        names.ANNOTATION_MAX_RETRIES: str(spec["backoffLimit"]),
    }
    job["metadata"]["annotations"] = {**job["metadata"].get("annotations", {}), **retries, ANNOTATION_RECOVERY: shown}
    template["metadata"]["annotations"] = {
        **template["metadata"].get("annotations", {}),
        **retries,
        ANNOTATION_RECOVERY: shown,
    }
    return KubernetesRequest(request.namespace, request.name, request.kind, objects, request.images_to_push)


def _time(stamp: Any) -> float | None:
    try:
        return datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _container_state(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    state: dict[str, Any] = statuses[0].get("state") or {}
    return state


def started(pod: dict[str, Any]) -> bool:
    """The pod's container started (it has a log, and the counter was bumped)."""
    state = _container_state(pod)
    return "running" in state or "terminated" in state


def attempt_number(first_log_line: str) -> int | None:
    """The attempt number the wrapper printed (None: not its line)."""
    match = ATTEMPT_LINE.search(first_log_line)
    return int(match.group(1)) if match else None


def attempts(job: dict[str, Any], pods: list[dict[str, Any]], numbers: dict[str, int]) -> AttemptLog:
    """The attempts of a recovering Job: its pods oldest first (``numbers``: pod name ->
    the attempt number its log gave); numbers no pod has left read as ended from outside."""
    ann = status.annotations_of(job)
    cancelled = names.ANNOTATION_CANCELLED in ann
    at_cancel = ann.get(ANNOTATION_CANCELLED_ATTEMPT, "")
    cancelled_n = int(at_cancel) if at_cancel.isdigit() else None
    conds = {c.get("type") for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    ordered = sorted(
        pods, key=lambda p: ((p.get("metadata") or {}).get("creationTimestamp") or "", p["metadata"]["name"])
    )
    log = AttemptLog(final="SUCCEEDED" if "Complete" in conds else "FAILED" if "Failed" in conds else None)
    nxt = 0
    for i, pod in enumerate(ordered):
        last = i == len(ordered) - 1
        n = numbers.get(pod["metadata"]["name"], nxt)
        _deleted(log, nxt, n)
        nxt = max(nxt, n + 1)
        state = _container_state(pod)
        run = state.get("running") or state.get("terminated") or {}
        attempt = RecoveredAttempt(n, started=_time(run.get("startedAt") or (pod.get("status") or {}).get("startTime")))
        attempt.ended = _time((state.get("terminated") or {}).get("finishedAt"))
        phase = (pod.get("status") or {}).get("phase")
        deleted = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        if phase == "Succeeded":
            attempt.state, attempt.exit_code = "SUCCEEDED", 0
        elif n == cancelled_n or (cancelled and cancelled_n is None and last and phase != "Failed"):
            attempt.state, attempt.cause, attempt.reason = (
                "CANCELLED",
                EndCause.CANCELLED.value,
                "cancelled through torchx",
            )
        elif phase == "Failed" or (deleted and not last):
            end = causes.pod_end(pod, job if last else None, f"attempt {n}")
            attempt.state, attempt.cause, attempt.exit_code, attempt.reason = (
                "FAILED",
                end.cause.value,
                end.exit_code,
                end.reason,
            )
        log.attempts.append(attempt)
    if cancelled_n is not None and cancelled_n >= nxt:  # cancel deleted the running attempt's pod
        _deleted(log, nxt, cancelled_n)
        log.attempts.append(
            RecoveredAttempt(cancelled_n, "CANCELLED", EndCause.CANCELLED.value, None, "cancelled through torchx")
        )
    return log


def _deleted(log: AttemptLog, first: int, end: int) -> None:
    """Attempts ``first`` .. ``end - 1``, whose pods were deleted: the server keeps nothing of them."""
    for n in range(first, end):
        reason = "its pod was deleted (evicted or removed through the API)"
        log.attempts.append(RecoveredAttempt(n, "FAILED", EndCause.KILLED.value, None, reason))
