"""The journal vocabulary of detached drivers (torchx-managed's attempts, torchx-sweep's trials):
the records of one run of an app, written as one JSON object a line with ``"ev"`` naming it.

::

    {"ev": "submitting", "run": 2, "name": APP_NAME, "target": "slurm", "t": ...}
    {"ev": "submitted", "run": 2, "handle": HANDLE, "t": ...}
    {"ev": "ended", "run": 2, "state": "FAILED", "msg": "...", "cause": "NODE_FAILURE", "exit_code": 3, "t": ...}

``run`` is the attempt's or trial's number; ``target``, ``cause``, ``exit_code`` and ``t``
are left out where a driver has none. :func:`parse` also reads the records written before this
vocabulary: torchx-managed's (``n``, ``started``, ``reason``) and torchx-sweep's (``i``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunSubmitting:
    """Run ``run`` (app name ``name``) is about to be submitted (to ``target``)."""

    run: int
    name: str
    target: str | None = None
    t: float | None = None


@dataclass(frozen=True)
class RunSubmitted:
    """Run ``run`` was submitted: its app handle."""

    run: int
    handle: str
    t: float | None = None


@dataclass(frozen=True)
class RunEnded:
    """Run ``run`` ended (or was never submitted) in ``state``, with why."""

    run: int
    state: str
    msg: str = ""
    cause: str | None = None
    exit_code: int | None = None
    t: float | None = None


RunRecord = RunSubmitting | RunSubmitted | RunEnded
_NAMES: dict[type[Any], str] = {RunSubmitting: "submitting", RunSubmitted: "submitted", RunEnded: "ended"}


def record(rec: RunRecord) -> dict[str, Any]:
    """The journal line of ``rec`` (fields without a value left out)."""
    return {"ev": _NAMES[type(rec)], **{k: v for k, v in vars(rec).items() if v is not None}}


def parse(ev: dict[str, Any]) -> RunRecord | None:
    """The run record of a journal line, in this vocabulary or an older one; None for any other line."""
    kind = ev.get("ev")
    run = ev.get("run", ev.get("n", ev.get("i")))
    if not isinstance(run, int):
        return None
    t = ev.get("t")
    t = float(t) if isinstance(t, int | float) else None
    if kind == "submitting":
        target = ev.get("target")
        return RunSubmitting(run, str(ev.get("name", "")), None if target is None else str(target), t)
    if kind in ("submitted", "started") and "handle" in ev:
        return RunSubmitted(run, str(ev["handle"]), t)
    if kind == "ended":
        cause, code = ev.get("cause"), ev.get("exit_code")
        return RunEnded(
            run,
            str(ev.get("state", "UNKNOWN")),
            str(ev.get("msg", ev.get("reason", ""))),
            None if cause is None else str(cause),
            code if isinstance(code, int) else None,
            t,
        )
    return None
