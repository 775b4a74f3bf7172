"""Why a SageMaker training job ended, from ``describe_training_job`` (pure).

========================================================  ==============================
``Completed``                                              ``APP_ERROR`` with exit code 0
``Stopped`` / secondary ``Stopped`` (StopTrainingJob)      ``CANCELLED``
secondary ``MaxRuntimeExceeded``, ``MaxWaitTimeExceeded``  ``TIMEOUT``
secondary ``Interrupted`` (managed Spot capacity taken)    ``PREEMPTED``
``Failed``, ``FailureReason`` ``CapacityError``,           ``NO_CAPACITY``
``ResourceLimitExceeded``, ``InsufficientCapacity...``
``Failed``, ``InternalServerError``                        ``NODE_FAILURE``
``Failed``, ``AlgorithmError`` / ``ClientError``           ``APP_ERROR`` (the exit code the
                                                           reason gives, if any)
========================================================  ==============================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end

_EXIT_CODE = re.compile(r"exit (?:code|status)[: ]+(\d+)", re.IGNORECASE)
_CAPACITY = ("CapacityError", "ResourceLimitExceeded", "InsufficientCapacity")


def training_end(job: Mapping[str, Any]) -> AttemptEnd | None:
    """The cause of an ended training job; None while it runs."""
    status = str(job.get("TrainingJobStatus", ""))
    secondary = str(job.get("SecondaryStatus", ""))
    reason = str(job.get("FailureReason") or "")
    said = "; ".join(w for w in (secondary, reason) if w)
    if status == "Completed":
        return AttemptEnd(EndCause.APP_ERROR, 0, said or "Completed")
    if status not in ("Stopped", "Failed"):
        return None
    if secondary in ("MaxRuntimeExceeded", "MaxWaitTimeExceeded"):
        return AttemptEnd(EndCause.TIMEOUT, None, said)
    if secondary == "Interrupted":
        return AttemptEnd(EndCause.PREEMPTED, None, said)
    if status == "Stopped":
        return AttemptEnd(EndCause.CANCELLED, None, said or "Stopped")
    if reason.startswith(_CAPACITY):
        return AttemptEnd(EndCause.NO_CAPACITY, None, said)
    if reason.startswith("InternalServerError"):
        return AttemptEnd(EndCause.NODE_FAILURE, None, said)
    m = _EXIT_CODE.search(reason)
    if m is not None:
        code = int(m.group(1))
        if 128 < code <= 128 + 64:
            end = signal_end(code - 128)
            return AttemptEnd(end.cause, code, said)
        return AttemptEnd(EndCause.APP_ERROR, code, said)
    if reason.startswith(("AlgorithmError", "ClientError")):
        return AttemptEnd(EndCause.APP_ERROR, None, said)
    return AttemptEnd(EndCause.UNKNOWN, None, said or "Failed")
