"""A job's state (the Jobs API's status plus the driver's records) as torchx responses (pure)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime

from torchx.schedulers.api import DescribeAppResponse
from torchx.specs.roles import NONE, Role
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, is_terminal

from torchx_sched_ray.request import META_ROLES
from torchx_sched_ray.torchx_ray_driver import records

#: Ray job statuses (``ray.job_submission.JobStatus`` values)
JOB_STATES = {
    "PENDING": AppState.PENDING,
    "RUNNING": AppState.RUNNING,
    "STOPPED": AppState.CANCELLED,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
}


def job_state(status: str) -> AppState:
    """The torchx state of a Ray job status (``JobStatus`` or its string)."""
    return JOB_STATES.get(str(getattr(status, "value", status)).upper(), AppState.UNKNOWN)


def job_times(state: AppState, start_time: object, end_time: object) -> tuple[float | None, float | None, float | None]:
    """(submitted, started, ended) in seconds from a Ray job's ``start_time``/``end_time``
    (milliseconds). Ray sets ``start_time`` when the job is submitted and keeps no other start,
    so it is the job's submission, and its start once it left PENDING; ``end_time`` once it ended."""

    def seconds(value: object) -> float | None:
        return value / 1000 if isinstance(value, (int, float)) and value > 0 else None

    submitted = seconds(start_time)
    started = submitted if state not in (AppState.PENDING, AppState.SUBMITTED) else None
    return submitted, started, seconds(end_time) if is_terminal(state) else None


def roles_of(metadata: dict[str, str]) -> list[tuple[str, int]]:
    """(role, replicas) of a torchx job from its metadata (empty if it is not torchx's)."""
    try:
        return [(str(name), int(n)) for name, n in json.loads(metadata.get(META_ROLES, "[]"))]
    except (ValueError, TypeError):
        return []


class ReplicaView:
    """What the records tell about one replica: its last state, exit code and host."""

    __slots__ = ("exit_code", "host", "state")

    def __init__(self) -> None:
        self.state: AppState | None = None
        self.exit_code: int | None = None
        self.host = ""


def replay(lines: Iterable[str], count: int) -> tuple[list[ReplicaView], int, list[str]]:
    """(per-replica view, restarts, driver messages) from the job log's lines."""
    views = [ReplicaView() for _ in range(count)]
    restarts = 0
    messages: list[str] = []
    for line in lines:
        rec = records.parse(line)
        if rec is None:
            continue
        if rec.kind == records.STATE and 0 <= rec.index < count:
            value, code, host = [*rec.payload.split(" "), "-", "-"][:3]
            view = views[rec.index]
            view.state = AppState[value] if value in AppState.__members__ else AppState.UNKNOWN
            view.exit_code = int(code) if code.lstrip("-").isdigit() else None
            view.host = "" if host == "-" else host
        elif rec.kind == records.ATTEMPT:
            restarts = int(rec.payload) if rec.payload.isdigit() else restarts
        elif rec.kind == records.MESSAGE:
            messages.append(rec.payload)
    return views, restarts, messages


def describe(
    app_id: str, status: str, message: str, metadata: dict[str, str], log_lines: Iterable[str]
) -> DescribeAppResponse:
    """The description of a torchx job: per-replica states from the driver's records.

    The app is PENDING while the Ray job runs but no replica has started (the placement
    group waits for room for all of them). A replica without a record of its own end takes
    the job's state once the job ended (the driver was killed).
    """
    state = job_state(status)
    roles = roles_of(metadata)
    count = sum(n for _, n in roles)
    views, restarts, messages = replay(log_lines, count)
    if state == AppState.RUNNING and views and all(v.state in (None, AppState.PENDING) for v in views):
        state = AppState.PENDING
    statuses: list[RoleStatus] = []
    failed: list[str] = []
    i = 0
    for name, n in roles:
        replicas = []
        for k in range(n):
            view = views[i]
            i += 1
            rstate = view.state if view.state is not None else AppState.PENDING if not is_terminal(state) else state
            if is_terminal(state) and not is_terminal(rstate):
                rstate = state
            replica = ReplicaStatus(id=k, state=rstate, role=name, hostname=view.host)
            if rstate == AppState.FAILED:
                replica.structured_error_msg = json.dumps({"exit_code": view.exit_code, "host": view.host})
                if view.exit_code is not None:
                    failed.append(f"{name}/{k} exited with code {view.exit_code}")
            replicas.append(replica)
        statuses.append(RoleStatus(name, replicas))
    # a replica's exit code says most; else the driver's last word (e.g. placement timed out), else Ray's
    msg = "; ".join(failed[:5]) if failed else (messages[-1] if messages else message or str(status))
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=restarts,
        msg=msg,
        structured_error_msg=json.dumps({"message": message, "replicas": failed[:5]}) if failed else NONE,
        roles_statuses=statuses,
        roles=[Role(name=name, image="", num_replicas=n) for name, n in roles],
    )


def replica_lines(
    lines: Iterable[str],
    index: int,
    streams: frozenset[str],
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[str]:
    """The output of replica ``index`` (global index, roles in order) in ``streams``, within [since, until)."""
    start = since.timestamp() if since else None
    end = until.timestamp() if until else None
    for line in lines:
        rec = records.parse(line)
        if rec is None or rec.index != index or rec.kind not in records.OUTPUT_KINDS:
            continue
        if records.OUTPUT_KINDS[rec.kind][0] not in streams:
            continue
        if (start is not None and rec.moment < start) or (end is not None and rec.moment >= end):
            continue
        yield rec.payload
