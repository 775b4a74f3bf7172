"""Job and replica states and the status a scheduler reports."""

from __future__ import annotations

from enum import Enum

from torchx.specs.roles import NONE
from torchx.util.record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class AppState(int, Enum):
    """State of a job (and of each replica: :data:`ReplicaState`).

    UNSUBMITTED -> SUBMITTED -> PENDING -> RUNNING -> SUCCEEDED | FAILED | CANCELLED.
    A preempted job may go back from RUNNING to PENDING. UNKNOWN: cannot be determined.
    """

    UNSUBMITTED = 0
    SUBMITTED = 1
    PENDING = 2
    RUNNING = 3
    SUCCEEDED = 4
    FAILED = 5
    CANCELLED = 6
    UNKNOWN = 7

    def __str__(self) -> str:
        return self.name


ReplicaState = AppState

_TERMINAL = frozenset({AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED})


def is_terminal(state: AppState) -> bool:
    """True for SUCCEEDED, FAILED and CANCELLED."""
    return state in _TERMINAL


def is_started(state: AppState) -> bool:
    """True once the job runs or has ended."""
    return state == AppState.RUNNING or state in _TERMINAL


#: which replica state the app takes when its replicas differ, most telling first
_ROLLUP_ORDER = (
    AppState.RUNNING,
    AppState.PENDING,
    AppState.SUBMITTED,
    AppState.UNKNOWN,
    AppState.CANCELLED,
    AppState.FAILED,
    AppState.SUCCEEDED,
)


def aggregate_states(states: Iterable[AppState]) -> AppState:
    """An app's state from its replicas': running while any runs, pending while any waits,
    then CANCELLED over FAILED over SUCCEEDED. No replicas or only unknown ones: UNKNOWN."""
    seen = set(states)
    return next((state for state in _ROLLUP_ORDER if state in seen), AppState.UNKNOWN)


@record
class ReplicaStatus:
    """State of one replica.

    Args:
        id: the replica's index in its role
        state: its state
        role: its role's name
        hostname: where it runs
        structured_error_msg: a JSON error, if the replica failed with one
    """

    id: int
    state: AppState
    role: str
    hostname: str
    structured_error_msg: str = NONE


@record
class RoleStatus:
    """States of the replicas of one role."""

    role: str
    replicas: list[ReplicaStatus] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain-data form of this status."""
        return {
            "role": self.role,
            "replicas": [
                {
                    "id": r.id,
                    "state": r.state.name,
                    "role": r.role,
                    "hostname": r.hostname,
                    "structured_error_msg": r.structured_error_msg,
                }
                for r in self.replicas
            ],
        }


class AppStatusError(Exception):
    """Raised by :meth:`AppStatus.raise_for_status` when a job did not succeed."""

    def __init__(self, status: AppStatus, *args: object) -> None:
        super().__init__(*args)
        self.status = status


@record
class AppStatus:
    """What a scheduler reports about a job.

    Args:
        state: the job's state
        num_restarts: how many times it was restarted
        msg: a human-readable message
        structured_error_msg: a JSON error message, if any
        ui_url: the scheduler's page for the job, if any
        roles: per-role, per-replica states (of the latest attempt)
    """

    state: AppState
    num_restarts: int = 0
    msg: str = ""
    structured_error_msg: str = NONE
    ui_url: str | None = None
    roles: list[RoleStatus] = field(default_factory=list)

    def is_terminal(self) -> bool:
        """True when the job has ended."""
        return is_terminal(self.state)

    def raise_for_status(self) -> None:
        """Raises :class:`AppStatusError` unless the job SUCCEEDED."""
        if self.state != AppState.SUCCEEDED:
            raise AppStatusError(
                self, f"job did not succeed: {self.state.name}" + (f": {self.msg}" if self.msg else "")
            )

    def to_json(self, filter_roles: list[str] | None = None) -> dict[str, Any]:
        """Plain-data form, limited to ``filter_roles`` when given."""
        roles = [r for r in self.roles if not filter_roles or r.role in filter_roles]
        error: Any = self.structured_error_msg
        if error not in (NONE, ""):
            import json

            try:
                error = json.loads(error)
            except ValueError:
                pass
        return {
            "state": self.state.name,
            "num_restarts": self.num_restarts,
            "msg": self.msg,
            "structured_error_msg": error,
            "ui_url": self.ui_url,
            "roles": [r.to_json() for r in roles],
        }

    def format(self, filter_roles: list[str] | None = None) -> str:
        """A human-readable, multi-line rendering."""
        lines = [f"State: {self.state.name}; Num Restarts: {self.num_restarts}"]
        if self.msg:
            lines.append(f"Msg: {self.msg}")
        if self.ui_url:
            lines.append(f"UI: {self.ui_url}")
        for role in self.roles:
            if filter_roles and role.role not in filter_roles:
                continue
            lines.append(f"Role {role.role}:")
            for r in role.replicas:
                host = f" on {r.hostname}" if r.hostname else ""
                lines.append(f"  {role.role}/{r.id}: {r.state.name}{host}")
                if r.structured_error_msg not in (NONE, ""):
                    lines.append(f"    error: {r.structured_error_msg}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        from torchx.util.yaml import dump

        return "AppStatus:\n" + "".join("  " + line + "\n" for line in dump(self.to_json()).splitlines())
