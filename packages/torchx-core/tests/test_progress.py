"""The status line shown while the CLI waits."""

from __future__ import annotations

import io
import time
from typing import Any

from torchx.cli.progress import StatusLine, summarize
from torchx.specs.status import AppState, AppStatus, ReplicaStatus, RoleStatus


def status(state: AppState, *replicas: AppState, msg: str = "") -> AppStatus:
    reps = [ReplicaStatus(i, s, "r", "h") for i, s in enumerate(replicas)]
    return AppStatus(state, msg=msg, roles=[RoleStatus("r", reps)])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


class FakeRunner:
    """Answers ``status`` from a script of statuses (the last one repeats)."""

    def __init__(self, *statuses: AppStatus) -> None:
        self.statuses = list(statuses)

    def status(self, app_handle: str) -> AppStatus:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


def test_summary_counts_replicas_and_shows_the_scheduler_message() -> None:
    s = status(AppState.RUNNING, AppState.RUNNING, AppState.RUNNING, AppState.PENDING, AppState.SUBMITTED,
               msg="Priority\nsecond line")  # fmt: skip
    assert summarize(s, 75) == "RUNNING  2 running, 2 pending  1:15  Priority"
    assert summarize(status(AppState.FAILED, AppState.FAILED, AppState.UNKNOWN), 0) == "FAILED  1 failed, 1 other  0:00"
    assert len(summarize(s, 75, width=20)) == 19


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_live_line_is_redrawn_in_place_and_log_lines_go_above_it() -> None:
    term, out = Terminal(), io.StringIO()
    line = StatusLine(FakeRunner(status(AppState.RUNNING, AppState.RUNNING)), "h", local=True, stream=term)  # type: ignore[arg-type]
    with line:
        wait_for(lambda: "RUNNING" in term.getvalue())
        line.print_above("r/0 hello\n", out)
    text = term.getvalue()
    assert text.startswith("\r\x1b[KRUNNING  1 running  0:00")
    # cleared before the log line, redrawn after it, cleared at the end
    assert text.count("\r\x1b[KRUNNING") == 2
    assert text.endswith("\r\x1b[K")
    assert out.getvalue() == "r/0 hello\n"


def test_plain_lines_on_state_changes_when_not_a_terminal() -> None:
    pipe = Pipe()
    runner = FakeRunner(status(AppState.PENDING, AppState.PENDING), status(AppState.RUNNING, AppState.RUNNING))
    line = StatusLine(runner, "h", local=True, stream=pipe)  # type: ignore[arg-type]
    line.interval = 0.01
    with line:
        wait_for(lambda: "RUNNING" in pipe.getvalue())
        time.sleep(0.05)
    assert pipe.getvalue().splitlines() == ["torchx: h PENDING  1 pending  0:00", "torchx: h RUNNING  1 running  0:00"]


def test_quiet_shows_nothing() -> None:
    term = Terminal()
    with StatusLine(FakeRunner(status(AppState.RUNNING)), "h", local=True, quiet=True, stream=term):  # type: ignore[arg-type]
        time.sleep(0.05)
    assert term.getvalue() == ""
