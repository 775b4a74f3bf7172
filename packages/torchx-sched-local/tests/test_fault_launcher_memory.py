"""Fault injection, issue 12 point 5: the supervisor does not carry the launcher.

A real launcher process that holds 1 GiB (touched pages) and has a secret on its command
line submits a job and exits. The supervisor starts as a fork of it (so short jobs end
fast) and, once the job has run ``HANDOVER_AFTER`` (20 ms), replaces itself with a fresh
interpreter: from then on the supervisor and its watchdog, measured from ``/proc``, stay
under 20 MB RSS, and their command line names the job directory only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import children, cmdline, eventually, proc_status, run_python
from torchx_sched_local.local_scheduler import LocalScheduler

LAUNCH = """
import os, sys, time
from torchx import specs
from torchx_sched_local.local_scheduler import LocalScheduler
ballast = b"\\1" * (1 << 30)  # 1 GiB, every page touched
with open("/proc/self/status") as f:
    rss = [int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")][0]
role = specs.Role("r", image="/tmp", entrypoint="sleep", args=["60"])
sched = LocalScheduler("t")
t0 = time.monotonic()
app_id = sched.submit(specs.AppDef("big", [role]), {"stop_grace_period": 1})
job_dir = sched.store.job_dir(app_id)
while "pid" not in (sched.store.state(app_id) or {}):  # the supervisor's first state write
    time.sleep(0.001)
supervisor = sched.store.state(app_id)["pid"]
# how long the supervisor shares this (still living) launcher's memory and command line
while True:
    with open(f"/proc/{supervisor}/cmdline", "rb") as f:
        if f.read().endswith(job_dir.encode() + b"\\0"):
            break
    time.sleep(0.001)
print(app_id, rss, time.monotonic() - t0)
"""

LIMIT = 20 * 1024 * 1024


def test_supervisor_of_a_1gib_launcher_is_small_and_names_only_the_job(sched: LocalScheduler) -> None:
    proc = run_python(LAUNCH, "--env", "TOKEN=s3cret-value")
    assert proc.returncode == 0, proc.stderr
    app_id, launcher_rss, shared_for = proc.stdout.split()
    assert int(launcher_rss) >= 1 << 30  # the launcher really held 1 GiB
    # a fork of the launcher only until the handover (20 ms of job, then a fresh interpreter's
    # start: ~50 ms idle, near a second beside a CPU hog on 2 cores); the bound only catches a
    # supervisor that never hands over, the latency itself is not this test's to time
    assert float(shared_for) < 10, f"the supervisor was the launcher's fork for {float(shared_for):.3f} s"
    eventually(lambda: ((sched.store.state(app_id) or {}).get("replicas") or [{}])[0].get("state") == "RUNNING")
    st = sched.store.state(app_id) or {}
    supervisor = st["pid"]
    replica = st["replicas"][0]["pid"]
    job_dir = sched.store.job_dir(app_id)
    assert cmdline(supervisor)[-1:] == [job_dir]
    # the replica and the watchdog (a shell, started before the replica)
    eventually(lambda: len(children(supervisor)) == 2, timeout=10)
    (watchdog,) = [pid for pid in children(supervisor) if pid != replica]
    for pid in (supervisor, watchdog):
        rss = proc_status(pid, "VmRSS")
        assert rss <= LIMIT, f"pid {pid}: {rss / 2**20:.1f} MB RSS"
        argv = cmdline(pid)
        assert "s3cret" not in " ".join(argv), argv
        assert "TOKEN" not in " ".join(argv), argv
    argv = cmdline(supervisor)
    assert argv[-1] == job_dir and os.path.basename(argv[3]) == "_supervise.py", argv
    argv = cmdline(watchdog)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "torchx-watchdog" and argv[-1] == job_dir, argv
    assert argv[4] == os.path.join(job_dir, "cancel"), argv  # the cancel marker the shell looks at
    assert os.path.basename(argv[8]) == "_supervise.py" and argv[9] == "--watchdog", argv
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.CANCELLED


HANDOVER = """
import os, sys, time
marker = os.path.join(sys.argv[1], "attempt-" + sys.argv[2])
first = not os.path.exists(marker)
open(marker, "a").write("x")
print("start", sys.argv[2], flush=True)
sys.stdout.write("partial-")
sys.stdout.flush()
time.sleep(1.5 + 0.2 * int(sys.argv[2]))
print("line", flush=True)
print("err", sys.argv[2], file=sys.stderr, flush=True)
if first and sys.argv[2] == "0":
    sys.exit(3)
"""


def test_the_handover_loses_nothing(sched: LocalScheduler, tmp_path: Path) -> None:
    """Output, a partial line, retries and replica states carry over the supervisor's exec."""
    from torchx import specs

    role = specs.Role(
        "r",
        image=str(tmp_path),
        entrypoint=sys.executable,
        args=["-c", HANDOVER, str(tmp_path), specs.macros.replica_id],
        num_replicas=2,
        max_retries=1,
        retry_policy=specs.RetryPolicy.REPLICA,
    )
    app_id = sched.submit(specs.AppDef("handover", [role]), {})
    supervisor = eventually_pid(sched, app_id)
    job_dir = sched.store.job_dir(app_id)
    eventually(lambda: cmdline(supervisor)[-1:] == [job_dir], timeout=10)  # handed over mid-job
    desc = sched.wait(app_id, timeout=60)
    assert desc is not None, desc.msg
    assert desc.state == AppState.SUCCEEDED, desc.msg
    st = sched.store.state(app_id) or {}
    assert st["pid"] == supervisor
    assert [r["restarts"] for r in st["replicas"]] == [1, 0]
    assert st["num_restarts"] == 1
    assert list(sched.log_iter(app_id, "r", 0, streams=Stream.STDOUT)) == ["start 0\n", "partial-line\n"] * 2
    assert list(sched.log_iter(app_id, "r", 1, streams=Stream.STDOUT)) == ["start 1\n", "partial-line\n"]
    assert sorted(sched.log_iter(app_id, "r", 1)) == ["err 1\n", "partial-line\n", "start 1\n"]
    assert not os.path.exists(os.path.join(sched.store.job_dir(app_id), "supervisor.resume"))
    assert Path(sched.store.job_dir(app_id), "supervisor.log").read_text() == ""


def test_cancel_after_the_handover(sched: LocalScheduler) -> None:
    from torchx.testing import command_app

    app_id = sched.submit(command_app("sh", "-c", "echo up; sleep 300", replicas=2), {"stop_grace_period": 1})
    supervisor_pid = eventually_pid(sched, app_id)
    job_dir = sched.store.job_dir(app_id)
    eventually(lambda: cmdline(supervisor_pid)[-1:] == [job_dir], timeout=10)
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.CANCELLED
    assert [r.state for r in desc.roles_statuses[0].replicas] == [AppState.CANCELLED] * 2


def eventually_pid(sched: LocalScheduler, app_id: str) -> int:
    eventually(lambda: (sched.store.state(app_id) or {}).get("pid") is not None)
    return int((sched.store.state(app_id) or {})["pid"])
