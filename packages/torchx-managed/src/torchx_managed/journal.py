"""A managed job on disk (core's :class:`~torchx.util.durable.DurableStore`), its state folded
from the journal, and the restart policy.

Layout, under :func:`default_root` (``$TORCHX_MANAGED_STATE_DIR``)::

    <root>/<job id>/spec.json       # options, targets' run options, session, cwd (written once)
                   /app.pickle      # the app every attempt runs
                   /events.jsonl    # the journal (each event fsync'ed before the step it announces)
                   /checkpoints/    # the default TORCHX_CHECKPOINT_DIR
                   /driver.lock, driver.log

Events (``t`` is the wall-clock time): an attempt's, in core's run vocabulary
(:mod:`torchx.util.journal`; ``run`` is the attempt's number; journals written before it said
``n``, ``started`` and ``reason``, and are read as well), and the job's own::

    {"ev": "submitting", "run": 2, "name": APP_NAME, "target": "slurm", "t": ...}
    {"ev": "submitted", "run": 2, "handle": HANDLE, "t": ...}
    {"ev": "ended", "run": 2, "state": "FAILED", "msg": "...", "cause": "NODE_FAILURE", "t": ...}
    {"ev": "cancel", "t": ...}                       # torchx cancel asked for it
    {"ev": "final", "state": "SUCCEEDED", "msg": "", "t": ...}
    {"ev": "notified", "key": "attempt_ended:2"}     # the notify receiver got it
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.causes import INFRASTRUCTURE_CAUSES, EndCause
from torchx.schedulers.recovery import DEFAULT_RESTART_BACKOFF
from torchx.util import journal
from torchx.util.durable import DurableStore, UnknownJobError, state_root

from torchx_managed.journal_store import RoutedStore, is_url
from torchx_managed.options import MAX_BACKOFF, ManagedOptions

STATE_DIR_ENV = "TORCHX_MANAGED_STATE_DIR"
APP = "app.pickle"
CHECKPOINTS = "checkpoints"


def default_root() -> str:
    """``$TORCHX_MANAGED_STATE_DIR``, else ``$XDG_STATE_HOME/torchx/managed``, else ``~/.local/state/torchx/managed``."""
    return state_root("managed", STATE_DIR_ENV)


class ManagedStore(RoutedStore):
    """The managed jobs stored under ``root`` (default :func:`default_root`; a URL: see
    :mod:`torchx_managed.journal_store`)."""

    def __init__(self, root: str | None = None) -> None:
        super().__init__(root or default_root(), "managed job")

    def _unknown(self, msg: str) -> UnknownJobError:
        return UnknownJobError(f"{msg}; `torchx list -s managed` shows the managed jobs stored here")

    def _locate(self, job_id: str) -> tuple[str, str]:
        return locate(job_id, self.root)

    def job_dir(self, job_id: str) -> str:
        """The directory of a job; ``ID@ROOT`` (a job kept in the ``journal`` directory
        ``ROOT``, e.g. shared with a cluster) is job ``ID`` under ``ROOT`` (a URL under a URL root).

        Raises:
            UnknownJobError: the id is not a plain name (or ``ROOT`` not an absolute path or URL)
        """
        root, name = locate(job_id, self.root)
        if is_url(root):
            return super().job_dir(job_id)
        return super().job_dir(name) if root == self.root else DurableStore(root, self.kind).job_dir(name)

    def load(self, job_id: str) -> JobState:
        """The job's spec and state, folded from its journal.

        Raises:
            UnknownJobError: no such job here
        """
        state = JobState(self.read_spec(job_id))
        for ev in self.events(job_id):
            state.apply(ev)
        return state


def located_id(job_id: str, root: str | None) -> str:
    """The app id of job ``job_id`` kept under ``root`` (None: this machine's state directory):
    ``ID@ROOT`` with ``ROOT`` percent-encoded, so the handle has no ``/`` of its own
    (``torchx log HANDLE/ROLE/REPLICA`` splits there)."""
    from urllib.parse import quote

    return job_id if root is None else f"{job_id}@{quote(root, safe='')}"


def locate(app_id: str, default_root: str) -> tuple[str, str]:
    """``(root, job id)`` of an app id of :func:`located_id`.

    Raises:
        UnknownJobError: ``ROOT`` is not an absolute path or a URL
    """
    from urllib.parse import unquote

    name, sep, quoted = app_id.partition("@")
    if not sep:
        return default_root, app_id
    root = unquote(quoted)
    if is_url(root):
        return root.rstrip("/"), name
    if not os.path.isabs(root):
        raise UnknownJobError(f"{app_id!r} is not a managed job id: {root!r} is not an absolute path")
    return os.path.normpath(root), name


@dataclass
class Attempt:
    """One attempt of a managed job (one submission to a target)."""

    n: int
    target: str
    name: str
    started: float
    handle: str | None = None
    state: str | None = None  # its final state once ended (None: not ended)
    cause: str | None = None
    exit_code: int | None = None
    reason: str = ""
    ended: float | None = None

    def as_json(self, live_state: str | None = None) -> dict[str, Any]:
        """The attempt as ``torchx status --json`` shows it."""
        return {
            "attempt": self.n,
            "handle": self.handle,
            "scheduler": self.target,
            "state": self.state or live_state or "SUBMITTED",
            "cause": self.cause,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "started": self.started,
            "ended": self.ended,
        }


@dataclass
class JobState:
    """What the journal says of a managed job."""

    spec: dict[str, Any]
    attempts: list[Attempt] = field(default_factory=list)
    cancelled: bool = False
    final: str | None = None
    msg: str = ""
    ended: float | None = None
    notified: set[str] = field(default_factory=set)

    @property
    def options(self) -> ManagedOptions:
        """The job's checked options."""
        return ManagedOptions.from_json(self.spec["options"])

    @property
    def last(self) -> Attempt | None:
        """The latest attempt, if any."""
        return self.attempts[-1] if self.attempts else None

    def apply(self, ev: dict[str, Any]) -> None:
        """Folds one event into the state."""
        kind = ev.get("ev")
        rec = journal.parse(ev)
        if isinstance(rec, journal.RunSubmitting):
            attempt = Attempt(rec.run, str(rec.target), rec.name, rec.t or 0.0)
            if self.attempts and self.attempts[-1].n == rec.run:  # submitted again after the driver stopped
                self.attempts[-1] = attempt
            else:
                self.attempts.append(attempt)
        elif rec is not None:
            a = self.last
            if a is None or a.n != rec.run:
                return
            if isinstance(rec, journal.RunSubmitted):
                a.handle = rec.handle
                return
            a.state, a.reason, a.exit_code, a.ended = rec.state, rec.msg, rec.exit_code, rec.t or 0.0
            # a success has no failure cause (journals written before said APP_ERROR for it)
            a.cause = None if a.state == "SUCCEEDED" else rec.cause
        elif kind == "cancel":
            self.cancelled = True
        elif kind == "final":
            self.final, self.msg, self.ended = str(ev["state"]), str(ev.get("msg", "")), float(ev.get("t", 0.0))
        elif kind == "notified":
            self.notified.add(str(ev.get("key")))

    def target_index(self, attempt: Attempt) -> int:
        """The position of the attempt's target in ``targets``."""
        targets = self.options.targets
        return targets.index(attempt.target) if attempt.target in targets else 0


#: how an ended attempt counts
FREE, RECOVERY, RESTART = "free", "recovery", "restart"


def classify(opts: ManagedOptions, attempt: Attempt, last_target: bool) -> str:
    """``free`` (restart uncounted: a ``recover_on_exit_codes`` exit, or no capacity where another
    target is left), ``recovery`` (the infrastructure's fault) or ``restart`` (the app's)."""
    if attempt.exit_code is not None and attempt.exit_code in opts.recover_on_exit_codes:
        return FREE
    cause = EndCause(attempt.cause) if attempt.cause in EndCause.__members__ else EndCause.UNKNOWN
    if cause in INFRASTRUCTURE_CAUSES:
        return RECOVERY
    if cause == EndCause.NO_CAPACITY and not last_target:
        return FREE
    return RESTART


@dataclass
class Step:
    """What to do after an attempt ended: ``final`` (with state and message) or run another on ``target``."""

    final: str | None = None
    msg: str = ""
    target: str = ""


def next_step(state: JobState) -> Step:
    """The policy: after the last attempt ended, finish the job or run the next attempt where."""
    opts = state.options
    last = state.last
    if state.cancelled:
        return Step("CANCELLED", "cancelled")
    if last is None:
        return Step(target=opts.targets[0])
    if last.state == "SUCCEEDED":
        return Step("SUCCEEDED", f"attempt {last.n} succeeded")
    if last.cause == EndCause.CANCELLED.value:
        return Step("CANCELLED", f"attempt {last.n} ({last.handle}) was cancelled outside torchx-managed")
    used = {FREE: 0, RECOVERY: 0, RESTART: 0}
    kind = FREE
    for a in state.attempts:
        idx = state.target_index(a)
        kind = classify(opts, a, idx == len(opts.targets) - 1)
        used[kind] += 1
    what = f"attempt {last.n} ended {last.cause}" + (
        f" (exit code {last.exit_code})" if last.exit_code is not None else ""
    )
    if last.reason:
        what += f": {last.reason}"
    if kind == RECOVERY and used[RECOVERY] > opts.max_recoveries:
        return Step("FAILED", f"{what}; max_recoveries={opts.max_recoveries} used up")
    if kind == RESTART and used[RESTART] > opts.max_restarts:
        return Step("FAILED", f"{what}; max_restarts={opts.max_restarts} used up")
    idx = state.target_index(last)
    if last.cause == EndCause.NO_CAPACITY.value and idx + 1 < len(opts.targets):
        idx += 1
    return Step(target=opts.targets[idx])


def restart_at(state: JobState) -> float | None:
    """When the next attempt may start after the last one ended on an application error (a
    ``restart``): ``restart_backoff`` after its end, doubled per such error in a row, at most
    :data:`~torchx_managed.options.MAX_BACKOFF`; None when no wait applies."""
    opts = state.options
    last = state.last
    backoff = DEFAULT_RESTART_BACKOFF if opts.restart_backoff is None else opts.restart_backoff
    if backoff <= 0 or last is None or last.state is None or last.ended is None:
        return None
    in_a_row = 0
    for a in reversed(state.attempts):
        if a.state is None or classify(opts, a, state.target_index(a) == len(opts.targets) - 1) != RESTART:
            break
        in_a_row += 1
    if in_a_row == 0:
        return None
    return last.ended + min(MAX_BACKOFF, float(backoff) * 2.0 ** (in_a_row - 1))
