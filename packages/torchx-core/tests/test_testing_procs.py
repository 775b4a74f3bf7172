"""The test scheduler ``procs`` ends an app as a real scheduler does: a failed replica's exit
code is in its error JSON (what torchx-managed reads for an attempt's cause), a cancel stops a
running app, and a cancel of an app that already ended changes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torchx.specs import AppState
from torchx.testing.apps import command_app
from torchx.testing.processes import eventually
from torchx.testing.procs import ProcsScheduler, create_scheduler


def _submit(sched: ProcsScheduler, code: str) -> str:
    return sched.schedule(sched.submit_dryrun(command_app(sys.executable, "-c", code), {}))


def _state(sched: ProcsScheduler, app_id: str) -> AppState:
    desc = sched.describe(app_id)
    assert desc is not None
    return desc.state


def test_a_failed_replica_reports_its_exit_code_and_a_later_cancel_changes_nothing(tmp_path: Path) -> None:
    sched = create_scheduler("t", root=str(tmp_path / "jobs"))
    app_id = _submit(sched, "raise SystemExit(3)")
    eventually(lambda: _state(sched, app_id) == AppState.FAILED, timeout=30, what="the app fails")
    desc = sched.describe(app_id)
    assert desc is not None
    (replica,) = desc.roles_statuses[0].replicas
    assert json.loads(replica.structured_error_msg) == {"exit_code": 3}
    sched.cancel(app_id)
    assert _state(sched, app_id) == AppState.FAILED


def test_a_cancel_stops_a_running_app(tmp_path: Path) -> None:
    sched = create_scheduler("t", root=str(tmp_path / "jobs"))
    app_id = _submit(sched, "import time; time.sleep(60)")
    assert _state(sched, app_id) == AppState.RUNNING
    sched.cancel(app_id)
    eventually(lambda: _state(sched, app_id) == AppState.CANCELLED, timeout=30, what="the app is cancelled")
    desc = sched.describe(app_id)
    assert desc is not None and desc.roles_statuses[0].replicas[0].structured_error_msg == "<NONE>"
