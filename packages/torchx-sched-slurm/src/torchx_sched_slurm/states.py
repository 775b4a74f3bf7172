"""Slurm job and step states as torchx :class:`AppState` s."""

from __future__ import annotations

from torchx.specs.status import AppState

#: every Slurm job/step state (``squeue``/``sacct`` long names) -> AppState
SLURM_STATES: dict[str, AppState] = {
    "BOOT_FAIL": AppState.FAILED,
    "CANCELLED": AppState.CANCELLED,
    "COMPLETED": AppState.SUCCEEDED,
    "COMPLETING": AppState.RUNNING,  # processes are ending; the result is not known yet
    "CONFIGURING": AppState.PENDING,  # nodes allocated, still booting
    "DEADLINE": AppState.FAILED,
    "FAILED": AppState.FAILED,
    "LAUNCH_FAILED": AppState.FAILED,
    "NODE_FAIL": AppState.FAILED,
    "OUT_OF_MEMORY": AppState.FAILED,
    "PENDING": AppState.PENDING,
    "POWER_UP_NODE": AppState.PENDING,
    "PREEMPTED": AppState.FAILED,
    "RECONFIG_FAIL": AppState.FAILED,
    "REQUEUED": AppState.PENDING,  # will run again
    "REQUEUE_FED": AppState.PENDING,
    "REQUEUE_HOLD": AppState.PENDING,
    "RESIZING": AppState.RUNNING,
    "RESV_DEL_HOLD": AppState.PENDING,
    "REVOKED": AppState.CANCELLED,  # federation: a sibling cluster runs it
    "RUNNING": AppState.RUNNING,
    "SIGNALING": AppState.RUNNING,
    "SPECIAL_EXIT": AppState.FAILED,
    "STAGE_OUT": AppState.RUNNING,
    "STOPPED": AppState.PENDING,  # allocation kept, processes stopped
    "SUSPENDED": AppState.PENDING,  # will resume
    "TIMEOUT": AppState.FAILED,
}


def slurm_state_name(raw: str) -> str:
    """The state word of a raw state: ``"CANCELLED by 0"`` -> ``"CANCELLED"``, ``"OUT_OF_ME+"`` kept."""
    return raw.strip().split(" ", 1)[0].upper() if raw.strip() else ""


def to_app_state(raw: str) -> AppState:
    """AppState of a raw Slurm state (``"RUNNING"``, ``"CANCELLED by 1000"`` ...); UNKNOWN if unknown."""
    return SLURM_STATES.get(slurm_state_name(raw), AppState.UNKNOWN)
