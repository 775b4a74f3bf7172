"""Why a ``local_docker`` container ended, from the Docker engine's ``State`` of it.

The engine reports ``ExitCode`` (``128 + N`` when the main process died of signal N),
``OOMKilled`` (the kernel's OOM killer ended it at the container's memory limit) and
``Error`` (it could not be started). It does not say who sent a signal: ``docker kill``,
``docker stop`` from outside torchx and a ``kill -9`` of its process on the host all read
``ExitCode: 137``; torchx's own stops are known apart (``cancel`` leaves a marker, a sibling
stopped after a failure is not the failure).
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from typing import Any

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end

#: the highest signal number (``128 + N`` exit codes above it are plain exit codes)
_MAX_SIGNAL = max(int(s) for s in signal.valid_signals())


def container_end(state: Mapping[str, Any], replica: str) -> AttemptEnd:
    """The cause of an ended container from its ``State`` (``replica``: ``role/k``, for the reason)."""
    code = state.get("ExitCode")
    code = code if isinstance(code, int) else None
    if state.get("OOMKilled"):
        return AttemptEnd(EndCause.KILLED, code, f"{replica} OOMKilled: out of memory at its memory limit")
    if state.get("Error"):
        return AttemptEnd(EndCause.APP_ERROR, code, f"{replica} could not start: {state['Error']}")
    if code is None:
        return AttemptEnd(EndCause.UNKNOWN, None, f"{replica} {state.get('Status', 'ended')}")
    if 128 < code <= 128 + _MAX_SIGNAL:
        end = signal_end(code - 128)
        return AttemptEnd(end.cause, code, f"{replica} exited with code {code} ({end.reason})")
    return AttemptEnd(EndCause.APP_ERROR, code, f"{replica} exited with code {code}")
