"""Why a Slurm job ended, from its accounting rows (pure but for :func:`sacct_args`, which
names the query).

``sacct -D`` lists every attempt of a job (a requeue starts a new one), each component of a
heterogeneous job (one per replica) with its steps; the last attempt is the one that ended,
the earlier ones are its requeue history. Slurm's words and torchx's causes:

================================  =====================================================
``NODE_FAIL``, ``BOOT_FAIL``      ``NODE_FAILURE``
``PREEMPTED``                     ``PREEMPTED``
``TIMEOUT``, ``DEADLINE``         ``TIMEOUT``
``OUT_OF_MEMORY``                 ``KILLED`` (the cgroup OOM killer)
``CANCELLED by <uid>``            ``CANCELLED`` when ``uid`` is the job's owner (``scancel``
                                  through torchx or by its user), else ``KILLED``
``FAILED``                        the failed replica's ``srun`` step: its exit code
                                  (``APP_ERROR``), or the signal that ended it
                                  (:func:`~torchx.schedulers.causes.signal_end`)
``COMPLETED``                     ``APP_ERROR`` with exit code 0
================================  =====================================================

A job that Slurm preempted but that ended by itself within ``GraceTime`` (after the SIGTERM)
is FAILED in accounting; slurmctld's ``PreemptTime`` (:func:`preempted_at`) makes it
``PREEMPTED``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end

from torchx_sched_slurm.parse import SEP, Component, split_job_name
from torchx_sched_slurm.states import slurm_state_name

#: ``sacct -o`` fields :func:`parse_attempts` reads, in order
CAUSE_FIELDS = ("JobID", "State", "ExitCode", "DerivedExitCode", "Reason", "UID", "NodeList", "End", "JobName")
#: job states that say at once why the job ended (checked in this order over the components)
_STATE_CAUSES = (
    ("NODE_FAIL", EndCause.NODE_FAILURE),
    ("BOOT_FAIL", EndCause.NODE_FAILURE),
    ("PREEMPTED", EndCause.PREEMPTED),
    ("TIMEOUT", EndCause.TIMEOUT),
    ("DEADLINE", EndCause.TIMEOUT),
    ("OUT_OF_MEMORY", EndCause.KILLED),
)
_ENDED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "TIMEOUT", "DEADLINE", "OUT_OF_MEMORY"}
)


def sacct_args(app_id: str) -> list[str]:
    """Arguments of ``sacct`` for every attempt (``-D``) of job ``app_id``, with its steps."""
    return ["-n", "-P", "-D", f"--delimiter={SEP}", "-o", ",".join(CAUSE_FIELDS), "-j", app_id]


@dataclass
class Attempt:
    """One attempt of one component (replica) of a job, as ``sacct`` reports it.

    Args:
        name: the component's job name (``<role>-<replica id>`` for torchx's)
        state: Slurm's state, raw (``"CANCELLED by 0"``)
        exit_code: the component's ``ExitCode`` (its batch script's, ``"3:0"``)
        derived: its ``DerivedExitCode`` (the highest of its steps')
        reason: ``Reason``
        uid: the owner's uid
        steps: ``(state, ExitCode)`` of each numbered step, by step id
        step_ends: when each numbered step ended (sacct's ``End``, ISO 8601; ``Unknown`` while running)
    """

    name: str
    state: str
    exit_code: str = ""
    derived: str = ""
    reason: str = ""
    uid: int | None = None
    steps: dict[int, tuple[str, str]] = field(default_factory=dict)
    step_ends: dict[int, str] = field(default_factory=dict)

    @property
    def word(self) -> str:
        """The state's word (``CANCELLED`` of ``CANCELLED by 0``)."""
        return slurm_state_name(self.state)

    @property
    def replica(self) -> str:
        """``role/k`` for a torchx component, else its job name."""
        parsed = split_job_name(self.name)
        return f"{parsed[0]}/{parsed[1]}" if parsed else self.name


def parse_attempts(text: str, app_id: str) -> list[list[Attempt]]:
    """Every component's attempts, oldest first, from ``sacct`` :func:`sacct_args` output of
    job ``app_id`` (a plain job is one component; a het job's are in offset order); none while
    accounting shows a het job's transient ``allocation`` row (not settled)."""
    width = len(CAUSE_FIELDS)
    components: dict[int, list[Attempt]] = {}
    for line in text.splitlines():
        fields = line.split(SEP)
        if len(fields) < width:
            continue
        job_id, state, exit_code, derived, reason, uid, _node, ended = (f.strip() for f in fields[: width - 1])
        name = SEP.join(fields[width - 1 :]).strip()
        head, _, step = job_id.partition(".")
        leader, plus, offset_text = head.partition("+")
        if leader != app_id or (plus and not offset_text.isdigit()):
            continue
        offset = int(offset_text) if plus else 0
        attempts = components.setdefault(offset, [])
        if not step:
            attempts.append(
                Attempt(
                    name=name,
                    state=state,
                    exit_code=exit_code,
                    derived=derived,
                    reason="" if reason in ("None", "") else reason,
                    uid=int(uid) if uid.isdigit() else None,
                )
            )
        elif step.isdigit() and attempts:
            attempts[-1].steps[int(step)] = (state, exit_code)
            attempts[-1].step_ends[int(step)] = ended
    if any(a.name == "allocation" for attempts in components.values() for a in attempts):
        return []  # the transient row of a het job before its components show up: not settled yet
    return [components[k] for k in sorted(components) if components[k]]


def _code(value: str) -> tuple[int | None, int | None]:
    """``"3:0"`` -> (3, None); ``"0:9"`` -> (None, 9)."""
    code, _, sig = value.strip().partition(":")
    if sig.isdigit() and int(sig):
        return None, int(sig)
    return (int(code) if code.isdigit() else None), None


def _replica_end(comp: Attempt) -> AttemptEnd:
    """How the replica of a FAILED component ended, from its ``srun`` step (its first)."""
    step_state, step_exit = comp.steps[max(comp.steps)] if comp.steps else ("", comp.exit_code)
    code, sig = _code(step_exit)
    derived, _ = _code(comp.derived)
    # Slurm records a replica killed by signal N with step ExitCode N:0 and DerivedExitCode 128+N
    if sig is None and code is not None and derived == 128 + code:
        sig = code
    if sig is not None:
        end = signal_end(sig)
        return AttemptEnd(end.cause, end.exit_code, f"{comp.replica} {end.reason} ({slurm_state_name(step_state)})")
    return AttemptEnd(EndCause.APP_ERROR, code, f"{comp.replica} exited with code {code}")


def _failed_first(comp: Attempt) -> int:
    """How surely a FAILED component is the replica that failed the job (lowest first): its step
    FAILED with its own exit status (an exit code, or the 128+N of a signal it died of from
    outside Slurm); its step FAILED with a signal Slurm delivered; no step row yet (accounting
    lags behind a step Slurm is still ending); a step Slurm cancelled as the job ended."""
    if not comp.steps:
        return 2
    state, exit_code = comp.steps[max(comp.steps)]
    if not state.startswith("FAILED"):
        return 3
    return 1 if _code(exit_code)[1] is not None else 0


def _step_end(comp: Attempt) -> str:
    """When the component's last step ended, for ordering (a step not ended sorts last)."""
    ended = comp.step_ends.get(max(comp.steps), "") if comp.steps else ""
    return ended if ended[:1].isdigit() else "~"


def _history(attempts: list[list[Attempt]]) -> str:
    """``" (after 1 requeue: NODE_FAIL)"``, or ``""`` for a job that ran once."""
    earlier = max(len(a) for a in attempts) - 1
    if earlier <= 0:
        return ""
    words: list[str] = []
    for k in range(earlier):
        states = {a[k].word for a in attempts if len(a) > k} - {"REQUEUED"}
        words.append("/".join(sorted(states)) or "REQUEUED")
    return f" (after {earlier} requeue{'s' if earlier > 1 else ''}: {', '.join(words)})"


def end_of(attempts: list[list[Attempt]]) -> AttemptEnd | None:
    """Why the job's last attempt ended; None while it has not (or there are no rows)."""
    if not attempts:
        return None
    last = [a[-1] for a in attempts]
    if not all(c.word in _ENDED for c in last):
        return None
    after = _history(attempts)
    words = {c.word for c in last}
    for word, cause in _STATE_CAUSES:
        if word in words:
            comp = next(c for c in last if c.word == word)
            reason = f"{word}" + (f" ({comp.reason})" if comp.reason else "")
            return AttemptEnd(cause, None, f"{comp.replica} {reason}{after}")
    cancelled = [c for c in last if c.word == "CANCELLED"]
    if cancelled and all(c.word == "CANCELLED" for c in last):
        comp = cancelled[0]
        by = comp.state.split(" by ", 1)[1].strip() if " by " in comp.state else ""
        if by.isdigit() and comp.uid is not None and int(by) != comp.uid:
            return AttemptEnd(EndCause.KILLED, None, f"{comp.state} (uid {by}, not the owner uid {comp.uid}){after}")
        return AttemptEnd(EndCause.CANCELLED, None, f"{comp.state}{after}")
    if words == {"COMPLETED"}:
        return AttemptEnd(EndCause.APP_ERROR, 0, f"COMPLETED{after}")
    # two replicas can read alike (one killed from outside, the other by Slurm's SIGKILL as the
    # job ended): the one whose step ended first failed the job
    failed = sorted((c for c in last if c.word == "FAILED"), key=lambda c: (_failed_first(c), _step_end(c)))
    if failed:
        end = _replica_end(failed[0])
        return AttemptEnd(end.cause, end.exit_code, end.reason + after)
    return AttemptEnd(EndCause.UNKNOWN, None, ", ".join(f"{c.replica} {c.state}" for c in last) + after)


def requeue_causes(attempts: list[list[Attempt]]) -> list[tuple[EndCause, str]]:
    """Why each earlier run of a requeued job ended (oldest first), from its first component's
    ``sacct -D`` rows: ``NODE_FAIL`` is ``NODE_FAILURE``, ``PREEMPTED`` is ``PREEMPTED``, a
    requeue by hand (``REQUEUED``) or anything else is ``KILLED``."""
    if not attempts:
        return []
    out: list[tuple[EndCause, str]] = []
    for run in attempts[0][:-1]:
        cause = next((c for word, c in _STATE_CAUSES if word == run.word), EndCause.KILLED)
        if cause == EndCause.TIMEOUT:
            cause = EndCause.KILLED
        reason = f"{run.word}" + (f" ({run.reason})" if run.reason else "") + ": Slurm requeued the job"
        out.append((cause, reason))
    return out


def from_controller(comps: list[Component], failed: list[bool]) -> list[list[Attempt]]:
    """Single attempts from slurmctld's view of the components (``squeue``: no uid, no step
    rows; ``failed[i]``: component ``i`` is the replica that failed), for :func:`end_of` when
    accounting has no settled rows yet. An exit status above 128 reads as a signal."""
    out: list[list[Attempt]] = []
    for comp, bad in zip(comps, failed, strict=True):
        code, sig = comp.exit_code, comp.signal
        if sig is None and code is not None and code > 128:
            code, sig = 0, code - 128
        steps = (
            {} if code is None and sig is None else {0: ("FAILED" if bad else "CANCELLED", f"{code or 0}:{sig or 0}")}
        )
        name = f"{comp.role}-{comp.replica_id}"
        out.append([Attempt(name=name, state=comp.state, reason=comp.reason, steps=steps)])
    return out


_PREEMPT_TIME = re.compile(r"(?:^|\s)PreemptTime=(\S+)")


def preempted_at(scontrol: str) -> str | None:
    """When slurmctld preempted the job, from ``scontrol show job -o`` output (None: never).

    A job that ends by itself within the partition's ``GraceTime`` after preemption's SIGTERM
    (torchx's script does) is recorded FAILED, not PREEMPTED; only slurmctld's ``PreemptTime``
    (kept for ``MinJobAge``) tells."""
    for m in _PREEMPT_TIME.finditer(scontrol):
        if m.group(1) not in ("None", "Unknown", "(null)"):
            return m.group(1)
    return None
