"""Slurm states -> AppState, per replica and for the app."""

from __future__ import annotations

import pytest
from torchx.specs import AppState
from torchx_sched_slurm.parse import Component
from torchx_sched_slurm.scheduler import replica_state
from torchx_sched_slurm.states import SLURM_STATES, slurm_state_name, to_app_state


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        ("PENDING", AppState.PENDING),
        ("CONFIGURING", AppState.PENDING),
        ("REQUEUED", AppState.PENDING),
        ("REQUEUE_HOLD", AppState.PENDING),
        ("SUSPENDED", AppState.PENDING),
        ("RUNNING", AppState.RUNNING),
        ("COMPLETING", AppState.RUNNING),
        ("RESIZING", AppState.RUNNING),
        ("COMPLETED", AppState.SUCCEEDED),
        ("FAILED", AppState.FAILED),
        ("PREEMPTED", AppState.FAILED),
        ("NODE_FAIL", AppState.FAILED),
        ("TIMEOUT", AppState.FAILED),
        ("OUT_OF_MEMORY", AppState.FAILED),
        ("BOOT_FAIL", AppState.FAILED),
        ("DEADLINE", AppState.FAILED),
        ("CANCELLED", AppState.CANCELLED),
        ("CANCELLED by 0", AppState.CANCELLED),
        ("CANCELLED by 1000", AppState.CANCELLED),
        ("cancelled", AppState.CANCELLED),
        ("SOMETHING_NEW", AppState.UNKNOWN),
        ("", AppState.UNKNOWN),
    ],
)
def test_to_app_state(raw: str, state: AppState) -> None:
    assert to_app_state(raw) == state


def test_every_documented_state_is_mapped() -> None:
    documented = {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "CONFIGURING",
        "COMPLETING",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PENDING",
        "PREEMPTED",
        "RUNNING",
        "RESV_DEL_HOLD",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "REQUEUED",
        "RESIZING",
        "REVOKED",
        "SIGNALING",
        "SPECIAL_EXIT",
        "STAGE_OUT",
        "STOPPED",
        "SUSPENDED",
        "TIMEOUT",
    }
    assert documented <= set(SLURM_STATES)
    assert AppState.UNKNOWN not in SLURM_STATES.values()


def test_state_name() -> None:
    assert slurm_state_name("CANCELLED by 0") == "CANCELLED"
    assert slurm_state_name(" running ") == "RUNNING"


def comp(state: str, **kw: object) -> Component:
    return Component(app_id="1", offset=0, role="r", replica_id=0, state=state, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("component", "state"),
    [
        (comp("RUNNING"), AppState.RUNNING),
        (comp("FAILED", step_state="COMPLETED", exit_code=0), AppState.SUCCEEDED),
        (comp("FAILED", step_state="FAILED", exit_code=3), AppState.FAILED),
        (comp("FAILED", step_state="CANCELLED by 0", signal=9), AppState.CANCELLED),
        (comp("FAILED", step_state="OUT_OF_MEMORY"), AppState.FAILED),
        (comp("FAILED", exit_code=3), AppState.FAILED),
        (comp("FAILED", signal=15), AppState.CANCELLED),
        (comp("FAILED", signal=11), AppState.FAILED),
        (comp("FAILED", exit_code=0), AppState.SUCCEEDED),
        (comp("FAILED"), AppState.FAILED),
        (comp("TIMEOUT", step_state="CANCELLED", signal=15), AppState.FAILED),
        (comp("CANCELLED by 0", step_state="COMPLETED", exit_code=0), AppState.CANCELLED),
        (comp("NODE_FAIL", exit_code=0), AppState.FAILED),
        (comp("COMPLETED", step_state="COMPLETED", exit_code=0), AppState.SUCCEEDED),
    ],
)
def test_replica_state(component: Component, state: AppState) -> None:
    assert replica_state(component) == state
