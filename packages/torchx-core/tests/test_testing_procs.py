"""The test scheduler ``procs`` ends an app as a real scheduler does: a failed replica's exit
code is in its error JSON (what torchx-managed reads for an attempt's cause), a cancel stops a
running app, and a cancel of an app that already ended changes nothing."""

from __future__ import annotations

import json
import subprocess
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


def test_a_replica_whose_launcher_died_before_recording_the_job_runs_nothing(tmp_path: Path) -> None:
    """A submitter killed between starting a job's replicas and writing its record: nothing runs
    (the job cannot be found, so its caller submits it again: it must not run twice)."""
    from torchx.testing import procs

    ran = tmp_path / "ran"
    record = tmp_path / "job.json"
    argv = [sys.executable, "-c", f"open({str(ran)!r}, 'w').close()"]
    launcher = subprocess.Popen([sys.executable, "-c", "pass"])  # a pid that is gone, not the wrapper's parent
    launcher.wait()
    wrapper = [sys.executable, "-c", procs._WRAPPER, str(tmp_path / "r.log"), str(tmp_path / "r.exit"), str(record)]
    proc = subprocess.run([*wrapper, str(launcher.pid), *argv], timeout=60)
    assert proc.returncode == 0
    assert not ran.exists() and not (tmp_path / "r.exit").exists()

    record.write_text("{}")  # recorded: it runs, whoever launched it
    subprocess.run([*wrapper, str(launcher.pid), *argv], timeout=60, check=True)
    assert ran.exists() and (tmp_path / "r.exit").read_text() == "0"
