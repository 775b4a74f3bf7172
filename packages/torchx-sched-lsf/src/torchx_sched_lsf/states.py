"""LSF job states (``bjobs`` STAT) as torchx :class:`AppState` s."""

from __future__ import annotations

from torchx.specs.status import AppState

#: every LSF job state -> AppState (EXIT is refined by the scheduler: killed jobs are CANCELLED)
LSF_STATES: dict[str, AppState] = {
    "PEND": AppState.PENDING,  # waiting to be scheduled
    "PSUSP": AppState.PENDING,  # held while pending (bsub -H, bstop)
    "WAIT": AppState.PENDING,  # chunk job member waiting for its turn
    "RUN": AppState.RUNNING,
    "USUSP": AppState.PENDING,  # suspended by its owner or an admin while running; resumes
    "SSUSP": AppState.PENDING,  # suspended by LSF (load, preemption, run window); resumes
    "PROV": AppState.PENDING,  # hosts being provisioned
    "DONE": AppState.SUCCEEDED,  # exit code 0
    "EXIT": AppState.FAILED,  # non-zero exit code, or killed
    "UNKWN": AppState.UNKNOWN,  # mbatchd lost contact with the execution host
    "ZOMBI": AppState.FAILED,  # killed while its host was unreachable; never finishes normally
}


def to_app_state(stat: str) -> AppState:
    """AppState of an LSF STAT word; UNKNOWN if unknown."""
    return LSF_STATES.get(stat.strip().upper(), AppState.UNKNOWN)
