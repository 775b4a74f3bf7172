"""local_cwd: jobs outlive their launcher; wait, cancel, delete, retries, list, concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from torchx import specs
from torchx.specs import AppState
from torchx.testing import alive, command_app, eventually, run_python
from torchx_sched_local import store
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.sessions import group_alive

LAUNCH = """
import sys, time
from torchx import specs
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.sessions import group_alive
sched = LocalScheduler("launcher")
role = specs.Role("r", image="/tmp", entrypoint="sh", args=["-c", sys.argv[1]])
print(sched.submit(specs.AppDef("bg", [role]), {}), flush=True)
if sys.argv[2] == "hang":
    time.sleep(60)
"""


def _replica_pids(sched: LocalScheduler, app_id: str) -> list[int]:
    st = sched.store.state(app_id) or {}
    return [r["pid"] for r in st.get("replicas", []) if r.get("pid")]


def test_job_outlives_a_launcher_that_exits(sched: LocalScheduler, tmp_path: Path) -> None:
    # the replica waits for the test, not a fixed time: a loaded machine may take longer than
    # any sleep to start the launcher, run it and describe the job
    go = tmp_path / "go"
    proc = run_python(LAUNCH, f"while [ ! -e '{go}' ]; do sleep 0.01; done; echo survived", "exit")
    assert proc.returncode == 0, proc.stderr
    app_id = proc.stdout.strip()
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.RUNNING  # a local job never queues, as in TorchX
    go.touch()
    desc = sched.wait(app_id, timeout=60)
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "r")) == ["survived\n"]


def test_job_outlives_a_launcher_killed_with_sigkill(sched: LocalScheduler) -> None:
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "sleep 0.5; echo still here", "hang"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    app_id = proc.stdout.readline().strip()
    proc.kill()
    proc.wait()
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.RUNNING  # a local job never queues, as in TorchX
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "r")) == ["still here\n"]


def test_job_survives_signals_to_the_launchers_process_group(sched: LocalScheduler) -> None:
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "sleep 0.5; echo unharmed", "hang"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    app_id = proc.stdout.readline().strip()
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        os.killpg(proc.pid, sig)
    proc.wait()
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    assert list(sched.log_iter(app_id, "r")) == ["unharmed\n"]


def test_launch_from_a_multithreaded_process_uses_a_fresh_interpreter(sched: LocalScheduler) -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        app_id = sched.submit(command_app("echo", "from exec path"), {})
    finally:
        stop.set()
        t.join()
    desc = sched.wait(app_id, timeout=20)
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "r")) == ["from exec path\n"]
    st = sched.store.state(app_id)
    assert st is not None
    # the exec path's supervisor is not our child
    with pytest.raises(ChildProcessError):
        os.waitpid(st["pid"], os.WNOHANG)


def test_wait_reacts_at_once_and_honours_timeout(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sleep", "0.4"), {})
    t = time.monotonic()
    desc = sched.wait(app_id, timeout=0.1)
    assert 0.09 <= time.monotonic() - t < 1.5  # the timeout, not the job's end (bound: a loaded machine)
    assert desc is not None
    assert desc.state == AppState.RUNNING
    desc = sched.wait(app_id, poll_interval=5)
    elapsed = time.monotonic() - t
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED
    assert elapsed < 0.4 + 2.5, elapsed  # not a poll_interval-sized (5 s) sleep (bound: a loaded machine)


def test_a_job_handed_to_its_supervisor_reads_running_as_in_torchx(sched: LocalScheduler) -> None:
    # right after submit, before the supervisor's first write (as TorchX 0.7: a local job never queues)
    app_id = sched.submit(command_app("sleep", "30"), {})
    assert sched.describe(app_id).state == AppState.RUNNING  # type: ignore[union-attr]
    assert [r.state for r in sched.list() if r.app_id == app_id] == [AppState.RUNNING]
    # the recorded SUBMITTED itself, while the live supervisor holds the job's lock
    eventually(lambda: (sched.store.state(app_id) or {}).get("state") == "RUNNING")
    path = os.path.join(sched.store.job_dir(app_id), store.STATE_FILE)
    recorded = store.read_json(path)
    store.write_json(path, {**recorded, "state": "SUBMITTED"})
    assert store.read_json(path)["state"] == "SUBMITTED"
    assert sched.describe(app_id).state == AppState.RUNNING  # type: ignore[union-attr]
    sched.cancel(app_id)
    assert sched.describe(app_id).state == AppState.CANCELLED  # type: ignore[union-attr]


def test_a_submitted_job_nobody_holds_reads_failed(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("true"), {})
    assert sched.wait(app_id, timeout=10).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    path = os.path.join(sched.store.job_dir(app_id), store.STATE_FILE)
    store.write_json(path, {**store.read_json(path), "state": "SUBMITTED", "replicas": []})
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED  # its supervisor is gone: no RUNNING without one
    assert "supervisor" in desc.msg


def test_cancel_kills_the_whole_process_tree(sched: LocalScheduler, tmp_path: Path) -> None:
    script = "sleep 300 & (sleep 300 & sleep 300) & echo started; wait"
    app_id = sched.submit(command_app("sh", "-c", script, replicas=2), {"stop_grace_period": 2.0})
    eventually(lambda: all(list(sched.log_iter(app_id, "r", k)) == ["started\n"] for k in (0, 1)))
    pgids = _replica_pids(sched, app_id)
    assert len(pgids) == 2
    assert all(group_alive(p) for p in pgids)
    t = time.monotonic()
    LocalScheduler("other", state_dir=sched.store.root).cancel(app_id)
    assert time.monotonic() - t < 2.0  # sh and sleep die on SIGTERM: no SIGKILL wait
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.CANCELLED
    assert [r.state for r in desc.roles_statuses[0].replicas] == [AppState.CANCELLED] * 2
    assert not any(group_alive(p) for p in pgids)


def test_cancel_escalates_to_sigkill_after_the_grace_period(sched: LocalScheduler) -> None:
    script = "trap '' TERM; echo ready; while :; do sleep 0.05; done"
    app_id = sched.submit(command_app("sh", "-c", script), {"stop_grace_period": 0.3})
    eventually(lambda: list(sched.log_iter(app_id, "r")) == ["ready\n"])
    pgids = _replica_pids(sched, app_id)
    t = time.monotonic()
    sched.cancel(app_id)
    assert 0.25 < time.monotonic() - t < 3
    assert sched.describe(app_id).state == AppState.CANCELLED  # type: ignore[union-attr]
    assert not any(group_alive(p) for p in pgids)


def test_stray_children_are_killed_when_the_replica_exits(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", "sleep 300 & echo $!"), {})
    assert sched.wait(app_id, timeout=10).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    (pid_line,) = list(sched.log_iter(app_id, "r"))
    child = int(pid_line)
    eventually(lambda: not alive(child))


def test_delete_forgets_the_job(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sleep", "300"), {"stop_grace_period": 1.0})
    eventually(lambda: bool(_replica_pids(sched, app_id)))
    pgids = _replica_pids(sched, app_id)
    job_dir = sched.store.job_dir(app_id)
    sched.delete(app_id)
    assert sched.describe(app_id) is None
    assert not os.path.exists(job_dir)
    assert app_id not in [a.app_id for a in sched.list()]
    assert not any(group_alive(p) for p in pgids)
    sched.delete(app_id)  # no-op


@pytest.mark.parametrize("external_logs", [False, True], ids=["logs-in-job-dir", "log_dir"])
def test_a_delete_as_soon_as_the_job_ended_leaves_nothing_behind(
    sched: LocalScheduler, tmp_path: Path, external_logs: bool
) -> None:
    # the supervisor's last acts after the final state (the .done markers) must not make a
    # removed directory again (it did in ~3% of these deletes before they were guarded)
    cfg = {"log_dir": str(tmp_path / "logs")} if external_logs else {}
    left: list[str] = []
    for _ in range(60):
        app_id = sched.submit(command_app("sh", "-c", "echo hi"), cfg)
        paths = [sched.store.job_dir(app_id), str(sched._log_root(app_id))]
        state = os.path.join(paths[0], store.STATE_FILE)
        while True:  # as tight as a user's script can be: delete the moment the end is readable
            try:
                with open(state) as f:
                    if '"SUCCEEDED"' in f.read():
                        break
            except OSError:
                pass
        sched.delete(app_id)
        left += paths
    time.sleep(0.3)  # every supervisor has ended by now
    assert [p for p in left if os.path.exists(p)] == []


def test_cancel_of_an_ended_job_is_a_noop(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("/bin/true"), {})
    sched.wait(app_id)
    sched.cancel(app_id)
    assert sched.describe(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------- retries

FLAKY = """
import os, sys
log = os.path.join(sys.argv[1], "starts-" + sys.argv[2])
with open(log, "a") as f:
    f.write("x")
fail_file = os.path.join(sys.argv[1], "fail-" + sys.argv[2])
if os.path.exists(fail_file):
    n = int(open(fail_file).read())
    if n > 0:
        open(fail_file, "w").write(str(n - 1))
        sys.exit(3)
"""


def _flaky_app(
    tmp_path: Path, policy: specs.RetryPolicy, max_retries: int, fails: dict[int, int], replicas: int = 2
) -> specs.AppDef:
    for k, n in fails.items():
        (tmp_path / f"fail-{k}").write_text(str(n))
    return command_app(
        sys.executable,
        "-c",
        FLAKY,
        str(tmp_path),
        specs.macros.replica_id,
        replicas=replicas,
        max_retries=max_retries,
        retry_policy=policy,
    )


def _starts(tmp_path: Path, k: int) -> int:
    path = tmp_path / f"starts-{k}"
    return len(path.read_text()) if path.exists() else 0


def _restarts(sched: LocalScheduler, app_id: str) -> list[int]:
    """Per replica, how often the supervisor restarted it (a replica killed for a group
    restart may not have got far enough to leave a mark of its own)."""
    return [r["restarts"] for r in (sched.store.state(app_id) or {})["replicas"]]


def test_replica_retry_restarts_only_the_failed_replica(sched: LocalScheduler, tmp_path: Path) -> None:
    app_id = sched.submit(_flaky_app(tmp_path, specs.RetryPolicy.REPLICA, 2, {1: 2}), {})
    desc = sched.wait(app_id, timeout=20)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    assert desc.num_restarts == 2
    assert (_starts(tmp_path, 0), _starts(tmp_path, 1)) == (1, 3)
    assert _restarts(sched, app_id) == [0, 2]


def test_application_retry_restarts_every_replica(sched: LocalScheduler, tmp_path: Path) -> None:
    app_id = sched.submit(_flaky_app(tmp_path, specs.RetryPolicy.APPLICATION, 1, {1: 1}), {})
    desc = sched.wait(app_id, timeout=20)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    assert desc.num_restarts == 1
    assert _restarts(sched, app_id) == [1, 1]
    assert _starts(tmp_path, 1) == 2


def test_retries_exhausted_fail_the_job(sched: LocalScheduler, tmp_path: Path) -> None:
    app_id = sched.submit(_flaky_app(tmp_path, specs.RetryPolicy.APPLICATION, 2, {0: 99}), {})
    desc = sched.wait(app_id, timeout=20)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert desc.num_restarts == 2
    assert desc.msg == "r/0 exited with code 3"
    assert _starts(tmp_path, 0) == 3


def test_role_retry_restarts_the_role_only(sched: LocalScheduler, tmp_path: Path) -> None:
    (tmp_path / "fail-1").write_text("1")
    flaky = specs.Role(
        "flaky",
        image="/tmp",
        entrypoint=sys.executable,
        args=["-c", FLAKY, str(tmp_path), specs.macros.replica_id],
        num_replicas=2,
        max_retries=1,
        retry_policy=specs.RetryPolicy.ROLE,
    )
    steady = specs.Role("steady", image="/tmp", entrypoint=sys.executable, args=["-c", FLAKY, str(tmp_path), "s"])
    app_id = sched.submit(specs.AppDef("roles", [flaky, steady]), {})
    desc = sched.wait(app_id, timeout=20)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    assert desc.num_restarts == 1
    assert _restarts(sched, app_id) == [1, 1, 0]
    assert len((tmp_path / "starts-s").read_text()) == 1


def test_failure_stops_the_other_replicas(sched: LocalScheduler) -> None:
    code = "import sys, time; sys.exit(5) if sys.argv[1] == '0' else time.sleep(300)"
    app_id = sched.submit(
        command_app(sys.executable, "-c", code, specs.macros.replica_id, replicas=3), {"stop_grace_period": 2}
    )
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert desc.msg == "r/0 exited with code 5"
    states = [r.state for r in desc.roles_statuses[0].replicas]
    assert states == [AppState.FAILED, AppState.CANCELLED, AppState.CANCELLED]


# ---------------------------------------------------------------------------------------- list


def test_list_is_newest_first_and_sees_other_processes(sched: LocalScheduler) -> None:
    first = sched.submit(command_app("/bin/true", name="first"), {})
    sched.wait(first)
    proc = run_python(LAUNCH, "exit 4", "exit")
    second = proc.stdout.strip()
    sched.wait(second)
    listed = sched.list()
    assert [a.app_id for a in listed] == [second, first]
    assert [a.state for a in listed] == [AppState.FAILED, AppState.SUCCEEDED]
    assert listed[1].name == "first"
    for app in listed:  # the times the job files record: submitted <= started <= ended
        assert app.submitted is not None and app.started is not None and app.ended is not None, app
        assert app.submitted <= app.started <= app.ended <= time.time()
    running = sched.submit(command_app("/bin/sleep", "30", name="running"), {})
    try:
        eventually(lambda: sched.list()[0].started is not None)
        assert sched.list()[0].ended is None
    finally:
        sched.cancel(running)


CONCURRENT = """
import sys
from torchx import specs
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.sessions import group_alive
sched = LocalScheduler("c")
ids = [sched.submit(specs.AppDef("c", [specs.Role("r", image="/tmp", entrypoint="/bin/true")]), {}) for _ in range(int(sys.argv[1]))]
print("\\n".join(ids))
"""


def _submit_concurrently(sched: LocalScheduler, processes: int, per_process: int) -> None:
    import subprocess

    procs = [
        subprocess.Popen([sys.executable, "-c", CONCURRENT, str(per_process)], stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    submitted = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0
        submitted += out.split()
    assert len(submitted) == len(set(submitted)) == processes * per_process
    for app_id in submitted:
        desc = sched.wait(app_id, timeout=60)
        assert desc is not None, (app_id, desc)
        assert desc.state == AppState.SUCCEEDED, (app_id, desc)
    listed = sched.list()
    assert sorted(a.app_id for a in listed) == sorted(submitted)
    assert {a.state for a in listed} == {AppState.SUCCEEDED}


def test_concurrent_submissions_are_not_lost(sched: LocalScheduler) -> None:
    _submit_concurrently(sched, 4, 25)


@pytest.mark.slow
def test_a_thousand_concurrent_submissions_are_not_lost(sched: LocalScheduler) -> None:
    _submit_concurrently(sched, 4, 250)
    # the CPU it takes (0.04 s under load 14; 0.2 s of wall time there, 0.54 s at worst): a
    # loaded machine's wait for a CPU is not counted
    t = time.process_time()
    assert len(sched.list()) == 1000
    assert time.process_time() - t < 0.25


def test_state_files_are_json_and_private(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("/bin/true"), {})
    sched.wait(app_id)
    job_dir = sched.store.job_dir(app_id)
    assert os.stat(sched.store.root).st_mode & 0o077 == 0
    assert os.stat(job_dir).st_mode & 0o077 == 0
    with open(os.path.join(job_dir, store.STATE_FILE)) as f:
        assert json.load(f)["state"] == "SUCCEEDED"
    assert not [n for n in os.listdir(job_dir) if n.endswith(".tmp")]


def test_end_fd_becomes_readable_when_the_job_ends(sched: LocalScheduler) -> None:
    """end_fd: one fd per job to select() on (a pidfd of its supervisor), also for a job this
    scheduler did not start; None once the job ended."""
    import select

    app_id = sched.submit(command_app("sh", "-c", "sleep 0.5"), {})
    fd = sched.end_fd(app_id)
    assert fd is not None
    other = LocalScheduler(sched.session_name, state_dir=sched.store.root)  # knows the job from its files only
    eventually(lambda: (sched.store.state(app_id) or {}).get("pid") is not None)
    fd2 = other.end_fd(app_id)
    assert fd2 is not None
    try:
        assert select.select([fd, fd2], [], [], 0.1)[0] == []  # still running
        started = time.monotonic()
        assert sorted(select.select([fd, fd2], [], [], 10)[0]) == sorted([fd, fd2])
        assert time.monotonic() - started < 5
        desc = sched.describe(app_id)
        assert desc is not None
        assert desc.state == AppState.SUCCEEDED
    finally:
        os.close(fd)
        os.close(fd2)
    assert other.end_fd(app_id) is None  # ended: nothing to wait for
    assert sched.end_fd("no-such-job") is None
