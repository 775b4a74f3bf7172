"""Parses what ``squeue`` and ``sacct`` print about torchx jobs (pure: no Slurm calls).

Both are asked for fields separated by ``\\x1f`` (unit separator), which no job name or path
here contains. A torchx job's components are named ``<role>-<replica id>`` (see
:func:`torchx_sched_slurm.script.job_name`); rows with other names (not torchx's, or the
transient ``allocation`` row ``sacct`` shows right after a het job is submitted) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

SEP = "\x1f"
#: ``squeue -O`` fields, in the order :func:`parse_squeue` reads them
SQUEUE_FIELDS = (
    "JobID",
    "HetJobID",
    "HetJobOffset",
    "State",
    "Reason",
    "NodeList",
    "RestartCnt",
    "DerivedEC",
    "WorkDir",
    "ArrayJobID",
    "ArrayTaskID",
    "Name",
    "SubmitTime",
    "StartTime",
    "EndTime",
)
#: ``sacct -o`` fields, in the order :func:`parse_sacct` reads them
SACCT_FIELDS = ("JobID", "State", "ExitCode", "Reason", "NodeList", "WorkDir", "JobName", "Submit", "Start", "End")
#: how many time fields (submitted, started, ended) follow the name in both
_TIMES = 3


def squeue_format() -> str:
    """The ``squeue -O`` argument for :data:`SQUEUE_FIELDS`."""
    return ",".join(f"{name}:{SEP}" for name in SQUEUE_FIELDS)


def sacct_format() -> str:
    """The ``sacct -o`` argument for :data:`SACCT_FIELDS` (use with ``-P --delimiter`` :data:`SEP`)."""
    return ",".join(SACCT_FIELDS)


@dataclass
class Component:
    """One component of a torchx job (one replica) as Slurm reports it.

    Args:
        app_id: the job id of the (het) job
        offset: the component's index in the het job (0 for a plain job)
        role: role name, from the component's job name
        replica_id: replica index, from the component's job name
        state: Slurm's state, raw (``"CANCELLED by 0"``)
        reason: why it is pending or ended (``squeue``/``sacct`` Reason), ``""`` if none
        node: the node it runs on, ``""`` if none yet
        workdir: the job's working directory (where the log files are)
        restarts: how often the job was requeued
        exit_code: exit code of the replica's process (its ``srun`` step's, or ``squeue``'s
            highest of the component's steps), None if unknown or ended by a signal
        signal: the signal that ended it, if one did
        step_state: state of the replica's ``srun`` step (``sacct`` only)
        submitted: when it was submitted (seconds since the epoch), None if not reported
        started: when it started; while it is pending, Slurm's estimate
        ended: when it ended; while it runs, when its time limit would end it
    """

    app_id: str
    offset: int
    role: str
    replica_id: int
    state: str
    reason: str = ""
    node: str = ""
    workdir: str = ""
    restarts: int = 0
    exit_code: int | None = None
    signal: int | None = None
    step_state: str | None = None
    submitted: float | None = None
    started: float | None = None
    ended: float | None = None


def job_id_key(app_id: str) -> tuple[int, int]:
    """Sort key of a job id: ``"12"`` -> (12, -1), an array element ``"12_3"`` -> (12, 3); others first."""
    head, sep, task = app_id.partition("_")
    if not head.isdigit() or (sep and not task.isdigit()):
        return (-1, -1)
    return (int(head), int(task) if sep else -1)


def _is_job_id(text: str) -> bool:
    """A plain job id (``12``) or an array element's (``12_3``)."""
    return job_id_key(text)[0] >= 0


def split_job_name(name: str) -> tuple[str, int] | None:
    """``"trainer-3"`` -> ``("trainer", 3)``; None if it is not a torchx component name."""
    role, sep, k = name.rpartition("-")
    if not sep or not role or not k.isdigit():
        return None
    return role, int(k)


def _clean(value: str) -> str:
    value = value.strip()
    return "" if value in ("None", "(null)", "N/A", "Unknown", "None assigned") else value


def _times(fields: list[str]) -> tuple[float | None, float | None, float | None]:
    """(submitted, started, ended) from Slurm's ``2026-11-29T01:02:03`` (the cluster's local time)."""
    found = [_time(f) for f in fields[:_TIMES]]
    found += [None] * (_TIMES - len(found))
    return found[0], found[1], found[2]


def _time(value: str) -> float | None:
    value = _clean(value)
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _name_and_times(fields: list[str], at: int) -> tuple[str, tuple[float | None, float | None, float | None]]:
    """The job name at ``at`` and the times after it (output recorded before the times has none)."""
    return fields[at].strip(), _times(fields[at + 1 :])


def parse_squeue(text: str) -> list[Component]:
    """Components from ``squeue -h -O`` :func:`squeue_format` output, ordered by job and offset."""
    comps: list[Component] = []
    at = len(SQUEUE_FIELDS) - _TIMES - 1  # the name's field
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split(SEP)
        if len(fields) <= at:
            continue
        job_id, het_id, offset, state, reason, node, restarts, derived, workdir, array_id, task = (
            f.strip() for f in fields[:at]
        )
        if array_id.isdigit() and task.isdigit():  # an array element (JobID is its raw id)
            job_id = f"{array_id}_{task}"
        name, (submitted, started, ended) = _name_and_times(fields, at)
        parsed = split_job_name(name)
        if parsed is None:
            continue
        is_het = het_id.isdigit()
        exit_code, signal = _wait_status(derived)
        comps.append(
            Component(
                app_id=het_id if is_het else job_id,
                offset=int(offset) if is_het and offset.isdigit() else 0,
                role=parsed[0],
                replica_id=parsed[1],
                state=state,
                reason=_clean(reason),
                node=_clean(node),
                workdir=_clean(workdir),
                restarts=int(restarts) if restarts.isdigit() else 0,
                exit_code=exit_code,
                signal=signal,
                submitted=submitted,
                started=started,
                ended=ended,
            )
        )
    comps.sort(key=lambda c: (job_id_key(c.app_id), c.offset))
    return comps


def _wait_status(value: str) -> tuple[int | None, int | None]:
    """(exit code, signal) of a raw wait status as ``squeue`` prints it: 768 = exit code 3, 9 = signal 9."""
    if not value.isdigit():
        return None, None
    status = int(value)
    if status & 0x7F:
        return None, status & 0x7F
    return status >> 8, None


def _exit_code(value: str) -> tuple[int | None, int | None]:
    """``sacct`` ExitCode ``"3:0"`` -> (3, None); ``"0:9"`` (killed by signal 9) -> (None, 9)."""
    code, _, sig = value.strip().partition(":")
    if sig.isdigit() and int(sig):
        return None, int(sig)
    return (int(code) if code.isdigit() else None), None


def _array_range(leader: str) -> list[str]:
    """Element ids of a pending-array row: ``"12_[0-2,5%2]"`` -> ``12_0 12_1 12_2 12_5``; else []."""
    head, sep, rest = leader.partition("_[")
    if not sep or not head.isdigit() or not rest.endswith("]"):
        return []
    ids: list[str] = []
    for part in rest[:-1].split("%", 1)[0].split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            return []
        ids += [f"{head}_{i}" for i in range(int(lo), int(hi if dash else lo) + 1)]
    return ids


def _split_job_id(job_id: str) -> tuple[str, int | None, str]:
    """``"12+1.3"`` -> ``("12", 1, "3")``; ``"12.batch"`` -> ``("12", None, "batch")``."""
    head, _, step = job_id.partition(".")
    leader, plus, offset = head.partition("+")
    return leader, (int(offset) if plus and offset.isdigit() else None), step


def parse_sacct(text: str) -> list[Component]:
    """Components (each with its job's restart count) from ``sacct -n -P -D`` :func:`sacct_format` output.

    With ``-D`` every attempt of a requeued job has its rows, oldest first; the last attempt
    wins and the number of earlier attempts is the job's restart count. The last step of a
    component in that attempt is the replica's latest ``srun`` (a job that recovers in Slurm
    runs one per attempt): it gives the replica's exit code
    and step state (step ids count across the components of a het job). The component's
    own ExitCode is the batch script's, so it is not taken as the replica's. Array elements
    that never started have no rows of their own, only their array's ``12_[3-5%2]`` row,
    whose state each of them takes.
    """
    at = len(SACCT_FIELDS) - _TIMES - 1  # the name's field
    unstarted: dict[str, Component] = {}
    alloc: dict[tuple[str, int], Component] = {}
    attempts: dict[tuple[str, int], int] = {}
    steps: dict[tuple[str, int], dict[int, tuple[str, str]]] = {}
    het_jobs: set[str] = set()
    for line in text.splitlines():
        fields = line.split(SEP)
        if len(fields) <= at:
            continue
        job_id, state, exit_code, reason, node, workdir = (f.strip() for f in fields[:at])
        name, (submitted, started, ended) = _name_and_times(fields, at)
        leader, offset, step = _split_job_id(job_id)
        parsed_name = split_job_name(name)
        if parsed_name is not None and not step:
            for element in _array_range(leader):
                unstarted[element] = Component(
                    element, 0, parsed_name[0], parsed_name[1], state, _clean(reason), submitted=submitted
                )
        if not _is_job_id(leader):
            continue
        if offset is not None:
            het_jobs.add(leader)
        key = (leader, offset or 0)
        if step:
            if step.isdigit():
                steps.setdefault(key, {})[int(step)] = (state, exit_code)
            continue
        parsed = split_job_name(name)
        if parsed is None:
            continue
        steps.pop(key, None)  # a new attempt: its steps follow
        attempts[key] = attempts.get(key, 0) + 1
        alloc[key] = Component(
            app_id=leader,
            offset=offset if offset is not None else -1,
            role=parsed[0],
            replica_id=parsed[1],
            state=state,
            reason=_clean(reason),
            node=_clean(node),
            workdir=_clean(workdir),
            submitted=submitted,
            started=started,
            ended=ended,
        )
    comps: list[Component] = []
    restarts: dict[str, int] = {}
    for key, comp in alloc.items():
        leader = key[0]
        if comp.offset < 0:
            if leader in het_jobs:
                continue  # the transient row of a het job before its components show up
            comp.offset = 0
        attempt_steps = steps.get(key)
        if attempt_steps:
            comp.step_state, step_exit = attempt_steps[max(attempt_steps)]
            comp.exit_code, comp.signal = _exit_code(step_exit)
        comp.restarts = attempts[key] - 1
        restarts[leader] = max(restarts.get(leader, 0), comp.restarts)
        comps.append(comp)
    for comp in comps:
        comp.restarts = restarts[comp.app_id]
    seen = {c.app_id for c in comps}
    comps += [c for element, c in unstarted.items() if element not in seen]
    comps.sort(key=lambda c: (job_id_key(c.app_id), c.offset))
    return comps
