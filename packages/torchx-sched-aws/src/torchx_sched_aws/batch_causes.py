"""Why an AWS Batch job ended, from its ``describe_jobs`` description (pure).

Batch says it in ``statusReason`` (the job's, and each attempt's) and, per attempt, the
container's ``exitCode`` and ``reason``:

==========================================================  =================================
``terminate_job``/``cancel_job`` with torchx's reason        ``CANCELLED``
``Host EC2 (instance i-...) terminated.``                    ``NODE_FAILURE`` (the host went:
                                                             a failure, or a Spot reclaim on
                                                             EC2 compute environments)
``Your Spot Task was interrupted.`` (Fargate Spot)           ``PREEMPTED``
``ResourceInitializationError``, ``DockerTimeoutError``,      ``NODE_FAILURE``
network interface provisioning time-outs
``OutOfMemoryError: Container killed due to memory usage``   ``KILLED``
``Job attempt duration exceeded timeout``                    ``TIMEOUT``
``Cannot*ContainerError``, ``Task failed to start``          ``APP_ERROR`` (image, command)
the container's exit code (128 + N: signal N)                ``APP_ERROR`` / signal
any other reason, without an exit code                       ``KILLED`` (terminated or
                                                             cancelled by someone else)
==========================================================  =================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end

_NODE = ("ResourceInitializationError", "DockerTimeoutError", "Timeout waiting for network interface")
_START = ("CannotPullContainerError", "CannotStartContainerError", "CannotCreateContainerError", "Task failed to start")


def _reasons(job: Mapping[str, Any]) -> list[str]:
    """The job's words, most specific first: the last attempt's container and status, then the job's."""
    attempts = job.get("attempts") or [{}]
    last = attempts[-1] or {}
    words = [
        (last.get("container") or {}).get("reason"),
        last.get("statusReason"),
        (job.get("container") or {}).get("reason"),
        job.get("statusReason"),
    ]
    return [str(w) for w in words if w]


def _exit_code(job: Mapping[str, Any]) -> int | None:
    attempts = job.get("attempts") or [{}]
    for container in ((attempts[-1] or {}).get("container"), job.get("container")):
        code = (container or {}).get("exitCode")
        if isinstance(code, int):
            return code
    return None


def batch_end(job: Mapping[str, Any], cancel_reason: str) -> AttemptEnd | None:
    """The cause of an ended job (``cancel_reason``: the reason torchx's cancel gives); None while it runs."""
    status = job.get("status")
    if status == "SUCCEEDED":
        return AttemptEnd(EndCause.APP_ERROR, 0, "succeeded")
    if status != "FAILED":
        return None
    reasons = _reasons(job)
    code = _exit_code(job)
    said = "; ".join(dict.fromkeys(reasons))
    if str(job.get("statusReason", "")).startswith(cancel_reason):
        return AttemptEnd(EndCause.CANCELLED, code, said)
    for text in reasons:
        if text.startswith("Host EC2") and "terminated" in text:
            return AttemptEnd(EndCause.NODE_FAILURE, code, said)
        if "Spot" in text and ("interrupt" in text or "reclaim" in text):
            return AttemptEnd(EndCause.PREEMPTED, code, said)
        if text.startswith(_NODE):
            return AttemptEnd(EndCause.NODE_FAILURE, code, said)
        if text.startswith("OutOfMemoryError"):
            return AttemptEnd(EndCause.KILLED, code, said)
        if text.startswith("Job attempt duration exceeded timeout"):
            return AttemptEnd(EndCause.TIMEOUT, code, said)
        if text.startswith(_START):
            return AttemptEnd(EndCause.APP_ERROR, code, said)
    if code is not None:
        if 128 < code <= 128 + 64:
            end = signal_end(code - 128)
            return AttemptEnd(end.cause, code, f"{said}; {end.reason}" if said else end.reason)
        return AttemptEnd(EndCause.APP_ERROR, code, said or f"exit code {code}")
    if reasons and not reasons[-1].startswith("Dependent Job failed"):
        return AttemptEnd(EndCause.KILLED, None, said)
    return AttemptEnd(EndCause.UNKNOWN, None, said or "failed (Batch gives no reason)")
