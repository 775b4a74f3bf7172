"""local_cwd's durability with as few fsyncs as it needs (see store.py, "Durability"): the record
before ``schedule`` returns, the final state; not the states in between."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from torchx.specs import AppState
from torchx.testing import command_app
from torchx_sched_local import store
from torchx_sched_local.local_scheduler import LocalScheduler

SUBMIT_AND_WAIT = """
import sys
from torchx.specs import AppDef, Resource, Role
from torchx_sched_local.local_scheduler import LocalScheduler

sched = LocalScheduler("t", state_dir=sys.argv[1])
app = AppDef("many", roles=[Role("r", "i", entrypoint="/bin/true", num_replicas=8, resource=Resource(1, 0, 64))])
app_id = sched.submit(app, {})
sys.stdout.write("SCHEDULED\\n")
sys.stdout.flush()
print(sched.wait(app_id, timeout=60).state.name)
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (apt-get install strace)")
def test_a_job_costs_three_fsyncs_to_record_and_two_to_end(tmp_path: Path) -> None:
    """Counted for real with strace across the launcher and the job's supervisor: the record
    (app.json, the job directory, the state directory) before schedule returns, the final
    state (file and directory) once; the states in between (8 replicas starting and ending)
    none."""
    script = tmp_path / "submit.py"
    script.write_text(textwrap.dedent(SUBMIT_AND_WAIT))
    trace = tmp_path / "trace"
    strace = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,write", "-o", str(trace)]
    proc = subprocess.run(
        [*strace, sys.executable, str(script), str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["SCHEDULED", "SUCCEEDED"]
    calls = trace.read_text().splitlines()
    scheduled = next(i for i, line in enumerate(calls) if "SCHEDULED" in line)
    fsyncs = [i for i, line in enumerate(calls) if re.search(r"\b(fsync|fdatasync)\(", line)]
    assert len([i for i in fsyncs if i < scheduled]) == 3, calls
    assert len([i for i in fsyncs if i > scheduled]) == 2, calls


def test_a_state_a_crash_left_empty_reads_failed_and_other_damage_is_reported(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id = sched.submit(command_app("true"), {})
    assert sched.wait(app_id, timeout=30).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    state_file = Path(sched.store.job_dir(app_id)) / store.STATE_FILE
    state_file.write_text("")  # what a crash leaves of a state that was never forced to disk
    with pytest.raises(store.UnreadableJobError, match=str(state_file)):
        sched.describe(app_id)  # recorded in this boot: the file was damaged, not lost in a crash
    monkeypatch.setattr(store, "boot_time", lambda: time.time() + 1)  # as after a reboot
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert "the machine stopped" in desc.msg
    end = sched.end_cause(app_id)
    assert end is not None and end.cause.value == "NODE_FAILURE"  # the machine went away
    assert [a.app_id for a in sched.list()] == [app_id]


def test_boot_time_is_in_the_past() -> None:
    assert 0 < store.boot_time() < time.time()
    assert os.path.exists("/proc/stat")
