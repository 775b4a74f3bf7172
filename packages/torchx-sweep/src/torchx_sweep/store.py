"""A sweep on disk: its spec (written once, atomically) and a journal of events (append-only).

Layout, under :func:`default_root` (``$TORCHX_SWEEP_STATE_DIR``)::

    <root>/<sweep id>/spec.json     # what to run: component, trials, scheduler, cfg, mode
                     /events.jsonl  # one JSON object per line, appended with one write(2) each
                     /driver.lock   # flock held by the live driver (its pid inside)
                     /driver.log    # the driver's stderr

The files, the journal's writing and the driver lock are core's
(:class:`torchx.util.durable.DurableStore`): concurrent writers (the driver's workers,
``torchx sweep cancel``) never interleave and a killed writer leaves at most a torn last line,
which readers ignore. The state of a sweep is the fold of its events (:meth:`SweepStore.load`).
Events: a trial's, in core's run vocabulary (:mod:`torchx.util.journal`; ``run`` is the trial's
index; journals written before it said ``i``), and the sweep's own::

    {"ev": "submitting", "run": 3, "name": APP_NAME}   # about to submit trial 3 (named APP_NAME)
    {"ev": "submitted", "run": 3, "handle": HANDLE}
    {"ev": "ended", "run": 3, "state": "SUCCEEDED", "msg": ""}
    {"ev": "cancel"}  {"ev": "fail_fast"}  {"ev": "finished"}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchx.util import journal
from torchx.util.durable import (
    EVENTS,
    LOCK,
    LOG,
    SPEC,
    DurableStore,
    UnknownJobError,
    UnsafeJobError,
    check_private,
)
from torchx.util.files import private_dir, private_fd, state_root, write_atomic

__all__ = [
    "EVENTS",
    "LOCK",
    "LOG",
    "SPEC",
    "STATE_DIR_ENV",
    "SweepState",
    "SweepStore",
    "TrialState",
    "UnknownSweepError",
    "UnsafeSweepError",
    "check_private",
    "default_root",
    "private_dir",
    "private_fd",
    "write_atomic",
]

STATE_DIR_ENV = "TORCHX_SWEEP_STATE_DIR"


def default_root() -> str:
    """``$TORCHX_SWEEP_STATE_DIR``, else ``$XDG_STATE_HOME/torchx/sweeps``, else ``~/.local/state/torchx/sweeps``."""
    return state_root("sweeps", STATE_DIR_ENV)


class UnknownSweepError(UnknownJobError):
    """No sweep with that id is stored here."""


class UnsafeSweepError(UnsafeJobError):
    """A sweep's files can be changed by other users: what it would run is not the user's to trust."""


@dataclass
class TrialState:
    """What is known of one trial.

    Attributes:
        index: its position in the sweep
        args: the swept component arguments
        state: an ``AppState`` name (``PENDING`` until submitted, ``UNSUBMITTED`` if never)
        handle: its app handle, once submitted
        submitting: the app name it was being submitted under (a submission in flight)
        msg: why it failed to submit, or the scheduler's last message
    """

    index: int
    args: dict[str, str]
    state: str = "PENDING"
    handle: str | None = None
    submitting: str | None = None
    msg: str = ""


@dataclass
class SweepState:
    """A sweep's spec and its trials' states, folded from the journal."""

    spec: dict[str, Any]
    trials: list[TrialState]
    cancelled: bool = False
    fail_fast_hit: bool = False
    finished: bool = False

    @property
    def sweep_id(self) -> str:
        """The sweep's id (last part of its handle)."""
        return str(self.spec["id"])


def _apply(state: SweepState, ev: dict[str, Any]) -> None:
    kind = ev.get("ev")
    if kind == "cancel":
        state.cancelled = True
        return
    if kind == "fail_fast":
        state.fail_fast_hit = True
        return
    if kind == "finished":
        state.finished = True
        return
    rec = journal.parse(ev)
    if rec is None or not 0 <= rec.run < len(state.trials):
        return
    trial = state.trials[rec.run]
    if isinstance(rec, journal.RunSubmitting):
        trial.submitting = rec.name
    elif isinstance(rec, journal.RunSubmitted):
        trial.handle, trial.submitting, trial.state = rec.handle, None, "SUBMITTED"
    else:
        trial.state, trial.msg, trial.submitting = rec.state, rec.msg, None


class SweepStore(DurableStore):
    """The sweeps stored under ``root`` (default: :func:`default_root`)."""

    unsafe_error = UnsafeSweepError

    def __init__(self, root: str | None = None) -> None:
        super().__init__(root or default_root(), "sweep")

    def _unknown(self, msg: str) -> UnknownJobError:
        return UnknownSweepError(f"{msg}; `torchx sweep list` shows the sweeps stored here")

    def sweep_dir(self, sweep_id: str) -> str:
        """The directory of a sweep.

        Raises:
            UnknownSweepError: the id is not a plain name
        """
        return self.job_dir(sweep_id)

    def create(self, spec: dict[str, Any]) -> str:  # type: ignore[override]
        """Stores a new sweep's spec; returns its directory."""
        return super().create(str(spec["id"]), spec)

    def load(self, sweep_id: str) -> SweepState:
        """The sweep's spec and state.

        Raises:
            UnknownSweepError: no such sweep here
        """
        spec = self.read_spec(sweep_id)
        trials = [TrialState(i, dict(t["args"])) for i, t in enumerate(spec["trials"])]
        for i, handle in enumerate(spec.get("handles") or []):
            trials[i].handle = handle
            trials[i].state = "SUBMITTED"
        state = SweepState(spec, trials)
        for ev in self.events(sweep_id):
            _apply(state, ev)
        return state

    def sweep_ids(self) -> list[str]:
        """Every stored sweep, oldest first."""
        return self.job_ids()
