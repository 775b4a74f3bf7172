"""App, role and replica states from the API objects (plain dicts as the server returns them).

``jobs`` mode: a replica's state is its Job's (``Complete``/``Failed`` conditions) refined
by its newest pod; a role fails when more of its replicas failed than ``num_replicas -
min_replicas`` allows; the app is CANCELLED once ``cancel`` annotated it.
Volcano and MCAD: the app state is the custom object's phase, replicas come from pods.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from torchx.specs.roles import RetryPolicy, Role
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, is_terminal

from torchx_sched_k8s import names

_POD_PHASES = {
    "Pending": AppState.PENDING,
    "Running": AppState.RUNNING,
    "Succeeded": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Unknown": AppState.UNKNOWN,
}
VOLCANO_PHASES = {
    "Pending": AppState.PENDING,
    "Inqueue": AppState.PENDING,
    "Restarting": AppState.PENDING,
    "Running": AppState.RUNNING,
    "Completing": AppState.RUNNING,
    "Completed": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Terminating": AppState.FAILED,
    "Terminated": AppState.FAILED,
    "Aborting": AppState.CANCELLED,
    "Aborted": AppState.CANCELLED,
}
#: seconds a Volcano Job may go without any status or pod before its status says that no Volcano
#: controller seems to run (a controller sets the phase within seconds of the creation)
VOLCANO_SILENT_AFTER = 120.0
#: ``$0`` of the ``sh -c`` in front of the app of a Job that recovers in Kubernetes (see
#: :mod:`torchx_sched_k8s.recovery`)
ATTEMPT_WRAPPER = "torchx-attempt"
MCAD_STATES = {
    "Pending": AppState.PENDING,
    "Running": AppState.RUNNING,
    "RunningHoldCompletion": AppState.RUNNING,
    "Completed": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Deleted": AppState.CANCELLED,
}


@dataclass
class RoleInfo:
    """What the annotations say about a role."""

    name: str
    index: int
    num_replicas: int
    min_replicas: int
    max_retries: int
    retry_policy: str


@dataclass
class Replica:
    """One replica's state and the objects behind it."""

    role: str
    replica: int
    state: AppState
    host: str = ""
    message: str = ""
    retries: int = 0
    job: dict[str, Any] | None = None


@dataclass
class AppView:
    """Everything describe reports about an app, plus what the scheduler acts on."""

    state: AppState
    roles: list[RoleInfo]
    replicas: list[Replica]
    num_restarts: int = 0
    msg: str = ""
    cancelled: bool = False
    stopped: bool = False
    failed_roles: list[str] = field(default_factory=list)
    role_defs: list[Role] = field(default_factory=list)

    def roles_statuses(self) -> list[RoleStatus]:
        """Per-role replica states, roles in app order, replicas by index."""
        out: list[RoleStatus] = []
        for info in self.roles:
            reps = sorted((r for r in self.replicas if r.role == info.name), key=lambda r: r.replica)
            out.append(RoleStatus(info.name, [ReplicaStatus(r.replica, r.state, r.role, r.host) for r in reps]))
        return out


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    """The object's annotations (empty if none)."""
    ann: dict[str, str] = _meta(obj).get("annotations") or {}
    return ann


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    """The object's labels (empty if none)."""
    lab: dict[str, str] = _meta(obj).get("labels") or {}
    return lab


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def role_info(ann: dict[str, str], fallback_name: str = "") -> RoleInfo:
    """The role an object belongs to, from its (or its pod template's) annotations."""
    num = _int(ann.get(names.ANNOTATION_NUM_REPLICAS), 1)
    return RoleInfo(
        name=ann.get(names.ANNOTATION_ROLE, fallback_name),
        index=_int(ann.get(names.ANNOTATION_ROLE_INDEX)),
        num_replicas=num,
        min_replicas=_int(ann.get(names.ANNOTATION_MIN_REPLICAS), num),
        max_retries=_int(ann.get(names.ANNOTATION_MAX_RETRIES)),
        retry_policy=ann.get(names.ANNOTATION_RETRY_POLICY, "APPLICATION"),
    )


def replica_key(obj: dict[str, Any]) -> tuple[str, int]:
    """(role name, replica index) of a Job or pod torchx made."""
    return annotations_of(obj).get(names.ANNOTATION_ROLE, ""), _int(labels_of(obj).get(names.LABEL_REPLICA_ID), -1)


def newest_pods(pods: Iterable[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The newest live pod of each replica (pods being deleted are ignored)."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for pod in pods:
        meta = _meta(pod)
        if meta.get("deletionTimestamp"):
            continue
        key = replica_key(pod)
        seen = out.get(key)
        stamp = (meta.get("creationTimestamp") or "", meta.get("name") or "")
        if seen is None or stamp > (_meta(seen).get("creationTimestamp") or "", _meta(seen).get("name") or ""):
            out[key] = pod
    return out


def pod_message(pod: dict[str, Any]) -> str:
    """Why a pod is not running or how it ended (e.g. ``ErrImagePull``, ``Error (exit 3)``)."""
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason") not in (None, "ContainerCreating"):
            waiting = state["waiting"]
            return f"{waiting.get('reason')}: {waiting.get('message', '')}".rstrip(": ")
        if "terminated" in state:
            term = state["terminated"]
            if term.get("exitCode", 0) != 0:
                return f"{term.get('reason', 'Error')} (exit {term.get('exitCode')})"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{cond.get('reason', 'Unschedulable')}: {cond.get('message', '')}".rstrip(": ")
    return str(status.get("message") or "")


def pod_state(pod: dict[str, Any] | None) -> AppState:
    """The state of a replica that has no Job (Volcano, MCAD): its pod's phase."""
    if pod is None:
        return AppState.PENDING
    return _POD_PHASES.get((pod.get("status") or {}).get("phase", ""), AppState.UNKNOWN)


def _conditions(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        c.get("type", ""): c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"
    }


def epoch(stamp: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 time the API server reports (``2026-11-29T01:02:03Z``)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def job_times(jobs: list[dict[str, Any]], state: AppState) -> tuple[float | None, float | None, float | None]:
    """(submitted, started, ended) of an app from its Jobs: the first ``metadata.creationTimestamp``
    and ``status.startTime``, and once the app is final the last ``status.completionTime`` (a Job
    that failed has none: its ``Failed`` condition's ``lastTransitionTime``); None where unknown."""
    created = [t for t in (epoch(_meta(j).get("creationTimestamp")) for j in jobs) if t is not None]
    started = [t for t in (epoch((j.get("status") or {}).get("startTime")) for j in jobs) if t is not None]
    ended = []
    for job in jobs:
        failed = _conditions(job).get("Failed") or {}
        end = epoch((job.get("status") or {}).get("completionTime")) or epoch(failed.get("lastTransitionTime"))
        if end is not None:
            ended.append(end)
    return (
        min(created) if created else None,
        min(started) if started else None,
        max(ended) if is_terminal(state) and ended and len(ended) == len(jobs) else None,
    )


def job_replica(job: dict[str, Any], pod: dict[str, Any] | None, cancelled: bool) -> Replica:
    """The replica a Job runs, its state refined by its newest pod."""
    role, replica = replica_key(job)
    conds = _conditions(job)
    status = job.get("status") or {}
    failed = _int(status.get("failed"))
    host = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
    message = pod_message(pod) if pod else ""
    if "Complete" in conds:
        state = AppState.SUCCEEDED
    elif cancelled:
        state = AppState.CANCELLED
    elif "Failed" in conds:
        state = AppState.FAILED
        cond = conds["Failed"]
        reason = f"{cond.get('reason', '')}: {cond.get('message', '')}".strip(": ")
        message = "; ".join(x for x in (reason, message) if x)
        failed = max(failed - 1, 0)
    elif pod is not None and pod_state(pod) in (AppState.RUNNING, AppState.SUCCEEDED):
        state = AppState.RUNNING
    else:
        state = AppState.PENDING
    return Replica(role, replica, state, host, message, failed, job)


def _role_def(info: RoleInfo, template_spec: dict[str, Any]) -> Role:
    container = (template_spec.get("containers") or [{}])[0]
    # every "$" of command, args and env values is written doubled (the kubelet's escape): undo it
    command = [w.replace("$$", "$") for w in container.get("command") or []]
    if command[:2] == ["sh", "-c"] and command[3:4] == [ATTEMPT_WRAPPER]:  # a Job that recovers: the app's own
        command = command[4:]
    args = [w.replace("$$", "$") for w in container.get("args") or []]
    return Role(
        name=info.name,
        image=container.get("image", ""),
        entrypoint=command[0] if command else "",
        args=command[1:] + args,
        num_replicas=info.num_replicas,
        min_replicas=info.min_replicas,
        max_retries=info.max_retries,
        retry_policy=RetryPolicy(info.retry_policy)
        if info.retry_policy in RetryPolicy.__members__
        else RetryPolicy.APPLICATION,
        env={e["name"]: e["value"].replace("$$", "$") for e in container.get("env") or [] if "value" in e},
    )


def _app_state(roles: list[RoleInfo], replicas: list[Replica]) -> tuple[AppState, list[str]]:
    """The app state of replicas that have no app-level status (``jobs`` mode), and the failed roles."""
    failed_roles = []
    for info in roles:
        failed = sum(1 for r in replicas if r.role == info.name and r.state == AppState.FAILED)
        if failed > info.num_replicas - info.min_replicas:
            failed_roles.append(info.name)
    if failed_roles:
        return AppState.FAILED, failed_roles
    expected = sum(info.num_replicas for info in roles)
    if len(replicas) >= expected and all(is_terminal(r.state) for r in replicas):
        return AppState.SUCCEEDED, []
    if any(r.state == AppState.RUNNING for r in replicas):
        return AppState.RUNNING, []
    return AppState.PENDING, []


def _first_message(replicas: list[Replica], states: tuple[AppState, ...]) -> str:
    for r in sorted(replicas, key=lambda r: (r.role, r.replica)):
        if r.state in states and r.message:
            return f"{r.role}/{r.replica}: {r.message}"
    return ""


def view_jobs(jobs: list[dict[str, Any]], pods: list[dict[str, Any]]) -> AppView | None:
    """The view of a ``jobs``-mode app from its Jobs and pods (None: no Jobs, unknown app)."""
    jobs = [j for j in jobs if not _meta(j).get("deletionTimestamp")]
    if not jobs:
        return None
    anns = [annotations_of(j) for j in jobs]
    cancelled = any(names.ANNOTATION_CANCELLED in a for a in anns)
    stopped = any(names.ANNOTATION_STOPPED in a for a in anns)
    restarts = max(_int(a.get(names.ANNOTATION_RESTARTS)) for a in anns)
    pod_of = newest_pods(pods)
    roles: dict[str, RoleInfo] = {}
    role_defs: dict[str, Role] = {}
    replicas = []
    for job, ann in zip(jobs, anns, strict=True):
        info = role_info(ann)
        roles.setdefault(info.name, info)
        rep = job_replica(job, pod_of.get(replica_key(job)), cancelled)
        replicas.append(rep)
        if rep.replica == 0 or info.name not in role_defs:
            role_defs[info.name] = _role_def(info, ((job.get("spec") or {}).get("template") or {}).get("spec") or {})
    ordered = sorted(roles.values(), key=lambda i: (i.index, i.name))
    state, failed_roles = _app_state(ordered, replicas)
    if cancelled:
        state = AppState.CANCELLED
    msg = _first_message(replicas, (AppState.FAILED,)) if state == AppState.FAILED else ""
    if not msg and state == AppState.PENDING:
        msg = _first_message(replicas, (AppState.PENDING,))
    return AppView(
        state=state,
        roles=ordered,
        replicas=replicas,
        num_restarts=restarts + sum(r.retries for r in replicas),
        msg=msg,
        cancelled=cancelled,
        stopped=stopped,
        failed_roles=failed_roles,
        role_defs=[role_defs[i.name] for i in ordered],
    )


def view_pods(
    templates: list[dict[str, Any]], pods: list[dict[str, Any]], state: AppState, restarts: int, cancelled: bool
) -> AppView:
    """The view of a Volcano/MCAD app: ``templates`` are its pod templates (metadata + spec)."""
    pod_of = newest_pods(pods)
    roles: dict[str, RoleInfo] = {}
    role_defs: dict[str, Role] = {}
    replicas = []
    for template in templates:
        info = role_info(annotations_of(template))
        roles.setdefault(info.name, info)
        key = replica_key(template)
        pod = pod_of.get(key)
        rep_state = AppState.CANCELLED if cancelled and pod_state(pod) != AppState.SUCCEEDED else pod_state(pod)
        host = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
        replicas.append(Replica(key[0], key[1], rep_state, host, pod_message(pod) if pod else ""))
        if key[1] == 0 or info.name not in role_defs:
            role_defs[info.name] = _role_def(info, template.get("spec") or {})
    ordered = sorted(roles.values(), key=lambda i: (i.index, i.name))
    if cancelled:
        state = AppState.CANCELLED
    msg = _first_message(replicas, (AppState.FAILED,)) if state == AppState.FAILED else ""
    return AppView(
        state=state,
        roles=ordered,
        replicas=replicas,
        num_restarts=restarts,
        msg=msg,
        cancelled=cancelled,
        role_defs=[role_defs[i.name] for i in ordered],
    )


def volcano_view(vcjob: dict[str, Any], pods: list[dict[str, Any]], now: float | None = None) -> AppView:
    """The view of a Volcano Job (``now``: the time to age it against, default the clock's).

    A Job that no controller has touched (no phase, no pod) for :data:`VOLCANO_SILENT_AFTER`
    seconds stays PENDING, and its message says why it probably never starts: the cluster
    serves Volcano's API (so ``mode=auto`` chose Volcano) with no Volcano controller running.
    """
    status = vcjob.get("status") or {}
    phase = (status.get("state") or {}).get("phase", "")
    state = VOLCANO_PHASES.get(phase, AppState.PENDING if not phase else AppState.UNKNOWN)
    templates = [t.get("template") or {} for t in (vcjob.get("spec") or {}).get("tasks") or []]
    cancelled = names.ANNOTATION_CANCELLED in annotations_of(vcjob)
    view = view_pods(templates, pods, state, _int(status.get("retryCount")), cancelled)
    created = epoch(_meta(vcjob).get("creationTimestamp"))
    age = (time.time() if now is None else now) - created if created is not None else 0.0
    if not phase and not pods and not cancelled and age >= VOLCANO_SILENT_AFTER:
        view.msg = (
            f"no Volcano controller has acted on this Volcano Job in {age:.0f} s (no status, no pods): the"
            " cluster serves Volcano's API, which mode=auto takes for Volcano, but nothing seems to run it;"
            " install Volcano, or submit with -cfg mode=jobs (plain Kubernetes Jobs)"
        )
    return view


def mcad_view(wrapper: dict[str, Any], pods: list[dict[str, Any]]) -> AppView:
    """The view of an MCAD AppWrapper."""
    status = wrapper.get("status") or {}
    raw = status.get("state", "")
    state = MCAD_STATES.get(raw, AppState.PENDING if not raw else AppState.UNKNOWN)
    items = ((wrapper.get("spec") or {}).get("resources") or {}).get("GenericItems") or []
    templates = [i["generictemplate"] for i in items if (i.get("generictemplate") or {}).get("kind") == "Pod"]
    cancelled = names.ANNOTATION_CANCELLED in annotations_of(wrapper)
    return view_pods(templates, pods, state, _int(status.get("numberOfRequeueings")), cancelled)
