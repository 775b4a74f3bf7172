"""Fault injection, issue 12 point 5: the supervisor does not carry the launcher.

A real launcher process that holds 1 GiB (touched pages) and has a secret on its command
line submits a job and exits. The supervisor starts as a fork of it (so short jobs end
fast) and, once the job has run ``REEXEC_AFTER`` (1 s), replaces itself with a fresh
interpreter: from then on the supervisor and its watchdog, measured from ``/proc``, stay
under 20 MB RSS, and their command line names the job directory only.
"""

from __future__ import annotations

import os

from sched_local_helpers import children, eventually, proc_status, run_python
from torchx.specs import AppState
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.supervisor import REEXEC_AFTER

LAUNCH = """
import os, sys
from torchx import specs
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.supervisor import REEXEC_AFTER
ballast = b"\\1" * (1 << 30)  # 1 GiB, every page touched
with open("/proc/self/status") as f:
    rss = [int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")][0]
role = specs.Role("r", image="/tmp", entrypoint="sleep", args=["60"])
app_id = LocalScheduler("t").submit(specs.AppDef("big", [role]), {"stop_grace_period": 1})
print(app_id, rss)
"""

LIMIT = 20 * 1024 * 1024


def _argv(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode().split("\0")[:-1]


def test_supervisor_of_a_1gib_launcher_is_small_and_names_only_the_job(sched: LocalScheduler) -> None:
    proc = run_python(LAUNCH, "--env", "TOKEN=s3cret-value")
    assert proc.returncode == 0, proc.stderr
    app_id, launcher_rss = proc.stdout.split()
    assert int(launcher_rss) >= 1 << 30  # the launcher really held 1 GiB
    eventually(lambda: ((sched.store.state(app_id) or {}).get("replicas") or [{}])[0].get("state") == "RUNNING")
    st = sched.store.state(app_id) or {}
    supervisor = st["pid"]
    replica = st["replicas"][0]["pid"]
    job_dir = sched.store.job_dir(app_id)
    eventually(lambda: _argv(supervisor)[-1:] == [job_dir], timeout=REEXEC_AFTER + 10)
    eventually(lambda: len(children(supervisor)) == 2)  # the replica and the watchdog (started after the handover)
    (watchdog,) = [pid for pid in children(supervisor) if pid != replica]
    for pid in (supervisor, watchdog):
        rss = proc_status(pid, "VmRSS")
        assert rss <= LIMIT, f"pid {pid}: {rss / 2**20:.1f} MB RSS"
        argv = _argv(pid)
        assert argv[-1] == job_dir and "s3cret" not in " ".join(argv) and "TOKEN" not in " ".join(argv), argv
        assert os.path.basename(argv[3]) == "_supervise.py" and argv[4:-1] in ([], ["--watchdog"]), argv
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED
