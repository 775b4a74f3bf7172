"""A forked supervisor tells its launcher the job ended before it exits (issue 31 point 2).

Exiting unmaps the supervisor's copy of the launcher's memory, which takes milliseconds for a
large launcher: ``wait`` returns once the final state is stored and the lock let go, not when
the process is gone. A real launcher whose supervisors (its forks) take 6 s to exit shows it,
and the pipe that carries the news reaches no replica.
"""

from __future__ import annotations

import json

from torchx.testing import alive, eventually, run_python

LAUNCH = """
import json, os, sys, time
from torchx import specs
from torchx_sched_local import store, supervisor
from torchx_sched_local import local_scheduler
from torchx_sched_local.local_scheduler import LocalScheduler

run_job = supervisor._run
def run_then_linger(*args, **kwargs):  # a supervisor forked from a huge launcher: long to go
    run_job(*args, **kwargs)
    time.sleep(6)
supervisor._run = run_then_linger
local_scheduler._LIVENESS_CHECK = 20.0  # wait's own look for a dead supervisor: not what ends it here

sched = LocalScheduler("t")
role = specs.Role("r", image="/tmp", entrypoint="ls", args=["/proc/self/fd"])
app_id = sched.submit(specs.AppDef("e", [role]), {})
desc = sched.wait(app_id, timeout=30)
returned = time.time()
st = sched.store.state(app_id)
took = returned - st["updated"]  # from when the final state was stored
print(json.dumps({
    "state": desc.state.name, "took": took, "pid": st["pid"],
    "held": store.lock_is_held(sched.store.job_dir(app_id)),
    "fds": list(sched.log_iter(app_id, "r", 0)),
}))
"""


def test_wait_returns_when_the_final_state_is_stored_not_when_the_supervisor_is_gone() -> None:
    proc = run_python(LAUNCH)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["state"] == "SUCCEEDED"
    # before: the lock was held until the exit, and wait returned once its liveness check (1 s)
    # found the final state; counted from the final state's store, not the submission (a loaded
    # machine may take seconds to start the job)
    assert not out["held"]  # the job's lock is let go with the news: readers see a finished job
    # the news, not the supervisor's exit (6 s later) nor a liveness check; room for a loaded machine
    assert out["took"] < 3.0, f"wait returned {out['took']:.2f} s after the final state was stored"
    assert out["fds"] == ["0\n", "1\n", "2\n", "3\n"], out["fds"]  # stdio and ls's own: no end pipe
    # the launcher exited before its supervisor: init reaps it once it is gone
    eventually(lambda: not alive(out["pid"]), timeout=30)
