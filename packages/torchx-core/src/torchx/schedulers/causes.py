"""Why an attempt ended: core's vocabulary, and the optional scheduler extension point that reports it.

A scheduler plugin that can tell *why* one of its apps ended (the backend's own words: sacct
states and reasons, pod conditions, Batch status reasons, LSF exit info, a lost supervisor)
implements :meth:`torchx.schedulers.Scheduler.end_cause` and answers in this vocabulary.
Callers that act on the answer (``torchx-managed`` restarts, the dashboard shows) never parse
backend strings themselves. A scheduler that does not implement it answers None, and the
caller falls back to :func:`cause_from_state`.

Budgets (torchx-managed): ``NODE_FAILURE``, ``PREEMPTED`` and ``KILLED`` are infrastructure
failures counted against ``max_recoveries``; ``APP_ERROR`` and ``UNKNOWN`` against
``max_restarts``; ``CANCELLED``, ``TIMEOUT`` and ``NO_CAPACITY`` are acted on by policy.
"""

from __future__ import annotations

import enum
import signal

from torchx.specs.status import AppState
from torchx.util.record import record

__all__ = [
    "EndCause",
    "AttemptEnd",
    "INFRASTRUCTURE_CAUSES",
    "CRASH_SIGNALS",
    "cause_from_state",
    "signal_cause",
    "signal_end",
    "signal_name",
]


class EndCause(str, enum.Enum):
    """The reason an app (one attempt of a managed job) ended."""

    #: ended by itself: succeeded (``exit_code`` 0) or the application failed (its exit code)
    APP_ERROR = "APP_ERROR"
    #: the backend took the allocation back (Slurm PREEMPTED, spot reclaimed, pod preempted)
    PREEMPTED = "PREEMPTED"
    #: the node or host running it was lost (Slurm NODE_FAIL, node lost, supervisor gone)
    NODE_FAILURE = "NODE_FAILURE"
    #: a signal torchx did not send (an operator's kill, the OOM killer, ``bkill`` by someone else)
    KILLED = "KILLED"
    #: the backend's time limit ended it (Slurm TIMEOUT, activeDeadlineSeconds, RUNLIMIT)
    TIMEOUT = "TIMEOUT"
    #: cancelled through torchx (or the backend's own cancel, by the owner)
    CANCELLED = "CANCELLED"
    #: it never started: no resources could be had (pending timeout, unschedulable)
    NO_CAPACITY = "NO_CAPACITY"
    #: the scheduler cannot tell
    UNKNOWN = "UNKNOWN"

    def __str__(self) -> str:
        return self.value


#: causes that are the infrastructure's fault (counted apart from the application's errors)
INFRASTRUCTURE_CAUSES: frozenset[EndCause] = frozenset({EndCause.PREEMPTED, EndCause.NODE_FAILURE, EndCause.KILLED})


@record(frozen=True)
class AttemptEnd:
    """Why an app ended, as its scheduler reports it.

    Attributes:
        cause: the reason, in core's vocabulary
        exit_code: the application's exit code where the backend reports one (None otherwise);
            a process ended by signal N is reported as ``128 + N`` (as shells, Docker and
            Kubernetes report it: 137 for SIGKILL)
        reason: the backend's own words (``"NODE_FAIL"``, ``"Evicted: ..."``, ``"Host EC2 ...
            terminated"``), shown to the user as is
    """

    cause: EndCause
    exit_code: int | None = None
    reason: str = ""


def cause_from_state(state: AppState, exit_code: int | None = None) -> AttemptEnd:
    """The best answer from an app's final state alone (for schedulers that report no cause)."""
    if state == AppState.SUCCEEDED:
        return AttemptEnd(EndCause.APP_ERROR, 0 if exit_code is None else exit_code, "succeeded")
    if state == AppState.CANCELLED:
        return AttemptEnd(EndCause.CANCELLED, exit_code, "cancelled")
    if state == AppState.FAILED and exit_code is not None:
        return AttemptEnd(EndCause.APP_ERROR, exit_code, f"exit code {exit_code}")
    return AttemptEnd(EndCause.UNKNOWN, exit_code, state.name.lower())


#: signals a process raises against itself (a crash, an abort, a resource limit it hit): an
#: application error, not a kill from outside
CRASH_SIGNALS: frozenset[int] = frozenset(
    int(s)
    for s in (
        signal.SIGSEGV,
        signal.SIGBUS,
        signal.SIGFPE,
        signal.SIGILL,
        signal.SIGABRT,
        signal.SIGTRAP,
        signal.SIGSYS,
        signal.SIGPIPE,
        signal.SIGXCPU,
        signal.SIGXFSZ,
    )
)


def signal_cause(signum: int) -> EndCause:
    """The cause of a process ended by signal ``signum`` that its scheduler did not send:
    ``APP_ERROR`` for :data:`CRASH_SIGNALS`, else ``KILLED`` (someone, or the OOM killer, sent it)."""
    return EndCause.APP_ERROR if signum in CRASH_SIGNALS else EndCause.KILLED


def signal_name(signum: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number with no name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signal_end(signum: int, reason: str = "") -> AttemptEnd:
    """How a process ended by signal ``signum`` (that its scheduler did not send) ended: the
    cause of :func:`signal_cause`, exit code ``128 + signum``."""
    return AttemptEnd(signal_cause(signum), 128 + signum, reason or f"killed by {signal_name(signum)}")
