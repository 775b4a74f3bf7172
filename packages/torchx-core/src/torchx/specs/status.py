"""Job and replica states and the status a scheduler reports.

Replica -> app state: two rules, one per kind of backend, written once here.

* :func:`aggregate_states`: the backend runs the job's parts and decides itself when the job
  fails (Slurm's heterogeneous jobs, LSF): the app is running while any part runs, then the
  most telling end (CANCELLED over FAILED over SUCCEEDED).
* :func:`fail_fast_state`: torchx starts the replicas and stops the rest at the first failure
  (Docker containers; ``local_cwd``'s supervisor applies the same rule as it goes, in its own
  process that imports only the standard library): FAILED as soon as one failed, CANCELLED
  after a cancel unless every replica had already succeeded.

Kubernetes (``jobs`` mode) has its own rule, for two reasons: a role with ``min_replicas``
tolerates ``num_replicas - min_replicas`` failed replicas (elastic jobs), so failures are
counted per role; and pods appear one by one, so SUCCEEDED waits until every expected
replica exists and ended (``torchx_sched_k8s.status``).
"""

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

    def __repr__(self) -> str:
        return f"{self.name} ({self.value})"


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


def fail_fast_state(states: Iterable[AppState], cancelled: bool = False) -> AppState:
    """An app's state from its replicas' where torchx stops the app at the first failure:
    after a cancel, CANCELLED (SUCCEEDED if every replica had already succeeded); else FAILED
    once one failed, SUCCEEDED once all succeeded, RUNNING while any runs or has ended,
    PENDING before."""
    seen = list(states)
    if cancelled:
        return AppState.SUCCEEDED if all(s == AppState.SUCCEEDED for s in seen) else AppState.CANCELLED
    if AppState.FAILED in seen:
        return AppState.FAILED
    if all(s == AppState.SUCCEEDED for s in seen):
        return AppState.SUCCEEDED
    if AppState.RUNNING in seen or AppState.SUCCEEDED in seen:
        return AppState.RUNNING
    return AppState.PENDING


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
        """Plain-data form (TorchX's keys, ``url`` also as ``ui_url``), limited to ``filter_roles`` when given."""
        roles = [r for r in self.roles if not filter_roles or r.role in filter_roles]
        return {
            "state": self.state.name,
            "num_restarts": self.num_restarts,
            "roles": [r.to_json() for r in roles],
            "msg": self.msg,
            "structured_error_msg": self.structured_error_msg,
            "url": self.ui_url,
            "ui_url": self.ui_url,
        }

    def format(self, filter_roles: list[str] | None = None) -> str:
        """A human-readable, multi-line rendering (the layout of TorchX's ``AppStatus.format``)."""
        roles = "".join(
            _format_replica(replica)
            for role in self.roles
            if not filter_roles or role.role in filter_roles
            for replica in sorted(role.replicas, key=lambda r: r.id)
        )
        return (
            f"AppStatus:\n    State: {self.state}\n    Num Restarts: {self.num_restarts}\n"
            f"    Roles: {roles}\n    Msg: {self.msg}\n    Structured Error Msg: {self.structured_error_msg}\n"
            f"    UI URL: {self.ui_url}\n    "
        )

    def __repr__(self) -> str:
        """YAML of the fields (sorted), with states as ``NAME (value)``, as TorchX prints it."""
        data = {
            "msg": self.msg,
            "num_restarts": self.num_restarts,
            "roles": [
                {
                    "replicas": [
                        {
                            "hostname": r.hostname,
                            "id": r.id,
                            "role": r.role,
                            "state": repr(r.state),
                            "structured_error_msg": r.structured_error_msg,
                        }
                        for r in role.replicas
                    ],
                    "role": role.role,
                }
                for role in self.roles
            ],
            "state": repr(self.state),
            "structured_error_msg": _parsed_error(self.structured_error_msg),
            "ui_url": self.ui_url,
        }
        return _yaml_dump({"AppStatus": data})


def _parsed_error(text: str) -> Any:
    """A structured error message as data (its text if it is not JSON)."""
    if text == NONE:
        return text
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def _yaml_dump(data: dict[str, Any]) -> str:
    from torchx.util.yaml import safe_dump

    return safe_dump(data)


def _format_replica(replica: ReplicaStatus) -> str:
    """One replica's line(s) in :meth:`AppStatus.format` (a torchelastic error file's
    message, exit code and time when it reported one)."""
    if replica.structured_error_msg != NONE:
        import json

        try:
            error = json.loads(replica.structured_error_msg)
        except ValueError:
            return replica.structured_error_msg  # as TorchX: the text alone
        try:
            message = error["message"]
            detail = _wrap_error(str(message["message"]), "    error_msg: ")
            timestamp = int(message["extraInfo"]["timestamp"])
            exitcode = message.get("errorCode") or "<N/A>"
        except (KeyError, TypeError, ValueError, AttributeError):  # not torchelastic's shape (TorchX crashes)
            data = f"{replica.state} {replica.structured_error_msg}"
        else:
            from datetime import datetime

            data = (
                f"{replica.state} (exitcode: {exitcode})\n        timestamp: {datetime.fromtimestamp(timestamp)}\n"
                f"        hostname: {replica.hostname}\n    {detail}"
            )
    else:
        data = str(replica.state)
        if replica.state == AppState.FAILED:  # TorchX's words: the replica wrote no error file
            data += " (no reply file)"
    mark = "*" if replica.id == 0 else " "  # marks where each role's replicas start
    return f"\n {mark}{replica.role}[{replica.id}]:{data}"


def _wrap_error(msg: str, header: str, width: int = 80) -> str:
    """The essential part of an error message, wrapped at spaces past ``width`` characters,
    the first line prefixed by ``header`` and the rest indented as deep."""
    import re

    rpc = re.search(r"(?P<exception_type>\w*)\('On WorkerInfo\(.+\):\n(.*\n)*'\)", msg)
    if rpc:
        msg = msg[rpc.start() : rpc.end()]
    embedded = re.search(r"(?P<msg>.+)\nException.*", msg)
    if embedded:
        msg = embedded.group("msg")
    lines = []
    start = 0
    for i in range(len(msg) + 1):
        if i == len(msg) or (msg[i] == " " and i - start >= width):
            lines.append(header + msg[start:i])
            header = " " * len(header)
            start = i
    return "\n".join(lines)
