"""Why a Ray job ended (pure), from the Jobs API's status and message and the driver's records.

==================================================  =======================================
``STOPPED`` (``stop_job``: torchx's cancel)          ``CANCELLED``
a replica's exit code (negative: the signal)          ``APP_ERROR`` / signal
a replica whose actor died (its worker process or    ``NODE_FAILURE``; ``KILLED`` where Ray
node died: ``ActorDiedError``)                        says it killed the worker for memory
                                                      (``NODE_OUT_OF_MEMORY``)
the placement timed out (no room for every replica)  ``NO_CAPACITY``
``SUCCEEDED``                                         ``APP_ERROR`` with exit code 0
==================================================  =======================================
"""

from __future__ import annotations

from collections.abc import Iterable

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end

from torchx_sched_ray.torchx_ray_driver import records

_MEMORY = ("NODE_OUT_OF_MEMORY", "running low on memory")
_PLACEMENT = "could not place all"


def ray_end(status: str, message: str, lines: Iterable[str]) -> AttemptEnd | None:
    """The cause of an ended job from its status (``JobStatus`` value), Ray's message and the
    job log's lines; None while it runs."""
    if status == "STOPPED":
        return AttemptEnd(EndCause.CANCELLED, None, message or "stopped")
    if status == "SUCCEEDED":
        return AttemptEnd(EndCause.APP_ERROR, 0, "succeeded")
    if status != "FAILED":
        return None
    why: dict[int, str] = {}  # the driver's word on a replica: "replica 3: <Ray's error>"
    driver: list[str] = []
    for line in lines:
        rec = records.parse(line)
        if rec is None:
            continue
        if rec.kind == records.MESSAGE:
            head, sep, rest = rec.payload.partition(": ")
            if sep and head.startswith("replica ") and head[8:].isdigit():
                why[int(head[8:])] = rest
            else:
                driver.append(rec.payload)
            continue
        if rec.kind != records.STATE or not rec.payload.startswith("FAILED "):
            continue
        code = rec.payload.split(" ")[1]
        if code.lstrip("-").isdigit():
            value = int(code)
            if value < 0:
                end = signal_end(-value)
                return AttemptEnd(end.cause, end.exit_code, f"replica {rec.index} {end.reason}")
            return AttemptEnd(EndCause.APP_ERROR, value, f"replica {rec.index} exited with code {value}")
        if rec.index in why:
            text = why[rec.index]
            cause = EndCause.KILLED if any(w in text for w in _MEMORY) else EndCause.NODE_FAILURE
            return AttemptEnd(cause, None, f"replica {rec.index}: {text}")
    if any(_PLACEMENT in text for text in driver):
        return AttemptEnd(EndCause.NO_CAPACITY, None, next(t for t in driver if _PLACEMENT in t))
    if "node" in message.lower() and ("died" in message or "dead" in message):
        return AttemptEnd(EndCause.NODE_FAILURE, None, message)
    return AttemptEnd(EndCause.UNKNOWN, None, (driver[-1] if driver else message) or "failed")
