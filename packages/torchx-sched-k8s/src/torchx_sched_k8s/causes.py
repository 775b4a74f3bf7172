"""Why a Kubernetes app ended, from its Jobs and pods as the API server returns them (pure).

A replica's failure is read from the pod that ran it last (pods being deleted included: an
evicted or deleted pod is the one that tells) and its Job's ``Failed`` condition:

=======================================================  ==================================
pod ``status.reason`` ``NodeLost``, ``NodeShutdown``,    ``NODE_FAILURE``
``Terminated``; condition ``DisruptionTarget`` by
``DeletionByTaintManager``/``TerminationByKubelet``/
``DeletionByPodGC``
pod ``status.reason`` ``Evicted`` (node pressure),       ``PREEMPTED``
``Preempting``; ``DisruptionTarget`` by
``PreemptionByScheduler``/``EvictionByEvictionAPI``
container ``OOMKilled``                                  ``KILLED``
Job condition ``DeadlineExceeded``                       ``TIMEOUT``
container exit code (128 + N: signal N)                  ``APP_ERROR`` / signal
pod ``Unschedulable`` and never started                  ``NO_CAPACITY``
=======================================================  ==================================

A pod deleted or evicted through the API while its Job may still run it again is replaced
by the Job controller: the replica goes on (the app does not end for it). The API servers
before 1.26 leave no ``DisruptionTarget`` condition: a deleted pod then reads as its
container's exit (137, ``KILLED``).
"""

from __future__ import annotations

from typing import Any

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end
from torchx.specs.status import AppState, is_terminal

from torchx_sched_k8s.status import AppView, replica_key

_NODE_REASONS = frozenset({"NodeLost", "NodeShutdown", "Terminated", "NodeAffinity"})
_PREEMPT_REASONS = frozenset({"Evicted", "Preempting"})
_DISRUPTION = {
    "PreemptionByScheduler": EndCause.PREEMPTED,
    "PreemptionByKubeScheduler": EndCause.PREEMPTED,
    "EvictionByEvictionAPI": EndCause.PREEMPTED,
    "DeletionByTaintManager": EndCause.NODE_FAILURE,
    "TerminationByKubelet": EndCause.NODE_FAILURE,
    "DeletionByPodGC": EndCause.NODE_FAILURE,
}


def _true_conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    conds = (obj.get("status") or {}).get("conditions") or []
    return {c.get("type", ""): c for c in conds if c.get("status") == "True"}


def _terminated(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The terminated state of the pod's (first) container that failed, else of its first one."""
    states = [
        (cs.get("state") or {}).get("terminated") for cs in (pod.get("status") or {}).get("containerStatuses") or []
    ]
    ended = [t for t in states if t]
    failed = [t for t in ended if t.get("exitCode", 0) != 0]
    first: dict[str, Any] | None = (failed or ended or [None])[0]
    return first


def pod_end(pod: dict[str, Any] | None, job: dict[str, Any] | None, replica: str) -> AttemptEnd:
    """How replica ``replica`` (``role/k``) ended: its last pod and, in ``jobs`` mode, its Job."""
    pod = pod or {}
    status = pod.get("status") or {}
    pod_reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    disruption = _true_conditions(pod).get("DisruptionTarget")
    if disruption and disruption.get("reason") in _DISRUPTION:
        why = f"{replica} {disruption['reason']}: {disruption.get('message', '')}".rstrip(": ")
        return AttemptEnd(_DISRUPTION[disruption["reason"]], None, why)
    if pod_reason in _NODE_REASONS or pod_reason in _PREEMPT_REASONS:
        cause = EndCause.NODE_FAILURE if pod_reason in _NODE_REASONS else EndCause.PREEMPTED
        return AttemptEnd(cause, None, f"{replica} {pod_reason}: {message}".rstrip(": "))
    job_failed = _true_conditions(job or {}).get("Failed") or {}
    if job_failed.get("reason") == "DeadlineExceeded":
        return AttemptEnd(EndCause.TIMEOUT, None, f"{replica} DeadlineExceeded: {job_failed.get('message', '')}")
    term = _terminated(pod)
    if term is None:
        scheduled = next(
            (
                c
                for c in status.get("conditions") or []
                if c.get("type") == "PodScheduled" and c.get("status") == "False"
            ),
            None,
        )
        if scheduled is not None:
            return AttemptEnd(EndCause.NO_CAPACITY, None, f"{replica} {scheduled.get('reason', 'Unschedulable')}")
        words = job_failed.get("reason") or pod_reason or "ended"
        return AttemptEnd(EndCause.UNKNOWN, None, f"{replica} {words}")
    code = int(term.get("exitCode", 0))
    container_reason = str(term.get("reason") or "")
    if container_reason == "OOMKilled":
        return AttemptEnd(EndCause.KILLED, code, f"{replica} OOMKilled (exit {code})")
    if 128 < code <= 128 + 64:
        end = signal_end(code - 128)
        return AttemptEnd(end.cause, code, f"{replica} exit {code} ({end.reason})")
    return AttemptEnd(EndCause.APP_ERROR, code, f"{replica} {container_reason or 'exit'} (exit {code})")


def last_pods(pods: list[dict[str, Any]], key: Any) -> dict[Any, dict[str, Any]]:
    """The newest pod of each replica (``key(pod)``), pods being deleted included."""
    out: dict[Any, dict[str, Any]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        stamp = (meta.get("creationTimestamp") or "", meta.get("name") or "")
        seen = out.get(key(pod))
        seen_meta = (seen or {}).get("metadata") or {}
        if seen is None or stamp > (seen_meta.get("creationTimestamp") or "", seen_meta.get("name") or ""):
            out[key(pod)] = pod
    return out


def app_end(view: AppView, pods: list[dict[str, Any]]) -> AttemptEnd | None:
    """Why the app of ``view`` ended (``pods``: every pod of it); None while it runs."""
    if not is_terminal(view.state):
        return None
    if view.cancelled:
        return AttemptEnd(EndCause.CANCELLED, None, "cancelled through torchx")
    if view.state == AppState.SUCCEEDED:
        return AttemptEnd(EndCause.APP_ERROR, 0, "succeeded")
    failed = sorted((r for r in view.replicas if r.state == AppState.FAILED), key=lambda r: (r.role, r.replica))
    if not failed:
        return AttemptEnd(EndCause.UNKNOWN, None, view.msg or view.state.name.lower())
    first = failed[0]
    pod = last_pods(pods, replica_key).get((first.role, first.replica))
    return pod_end(pod, first.job, f"{first.role}/{first.replica}")
