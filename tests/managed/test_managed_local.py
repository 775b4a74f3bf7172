"""The managed scheduler on local_cwd with real processes and real signals: a counter that is
SIGKILLed three times resumes from its checkpoint and finishes; a lost supervisor is recovered;
app errors use max_restarts; recover_on_exit_codes; cancel; a SIGKILLed driver is resumed by the
next look; notify; ``torchx sweep -s managed``; bad input; the Runner API and ``.torchxconfig``.

Every job passes ``controller=local``: these test the local driver (a job whose one target is
local_cwd otherwise recovers in its supervisor: test_managed_native_local_live.py).

Needs torchx-sched-local (the e2e session installs every package)."""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.runner import Runner, get_runner
from torchx.specs import AppState
from torchx.specs.handles import parse_app_handle
from torchx.testing import run_cli
from torchx.testing.apps import command_app
from torchx.testing.processes import alive, eventually
from torchx_managed.journal import JobState, ManagedStore

# the counter app of torchx-managed's tests, read from the repository (run from its root)
COUNTER = str(Path(__file__).parents[2] / "packages" / "torchx-managed" / "tests" / "counter.py")


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("mtest") as r:
        yield r


def counter(n: int, step: float, plan: str = "") -> Any:
    return command_app(sys.executable, COUNTER, str(n), str(step), *([plan] if plan else []), name="counter")


def journal(handle: str) -> JobState:
    return ManagedStore().load(parse_app_handle(handle).app_id)


def ckpt(handle: str) -> Path:
    return Path(journal(handle).spec["checkpoint_dir"])


def steps(handle: str) -> list[tuple[int, int]]:
    path = ckpt(handle) / "steps"
    if not path.exists():
        return []
    return [(int(a), int(c)) for a, c in (line.split() for line in path.read_text().splitlines() if line.strip())]


def pid_of(handle: str, attempt: int) -> int:
    path = ckpt(handle) / f"pid-{attempt}"
    eventually(lambda: path.exists() and path.read_text().strip() != "", timeout=30)
    return int(path.read_text())


def attempts(handle: str) -> list[tuple[str | None, str | None, int | None]]:
    return [(a.state, a.cause, a.exit_code) for a in journal(handle).attempts]


def test_counter_sigkilled_three_times_resumes_and_finishes(runner: Runner) -> None:
    handle = runner.run(counter(40, 0.05), "managed", {"targets": ["local_cwd"], "controller": "local"})
    assert handle.startswith("managed://mtest/counter-")
    for k in range(3):
        pid = pid_of(handle, k)
        eventually(lambda k=k: sum(1 for a, _ in steps(handle) if a == k) >= 3, timeout=30)
        os.kill(pid, signal.SIGKILL)
        eventually(lambda k=k: len(journal(handle).attempts) > k + 1, timeout=30)
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    assert (ckpt(handle) / "count").read_text() == "40"
    done = steps(handle)
    counts = [c for _, c in done]
    assert counts == sorted(counts) and len(set(counts)) == len(counts), "a step ran twice"
    assert counts[-1] == 40
    firsts = {a: min(c for b, c in done if b == a) for a in {a for a, _ in done}}
    assert sorted(firsts) == [0, 1, 2, 3]
    assert all(firsts[a] > firsts[a - 1] + 2 for a in (1, 2, 3)), f"an attempt started over: {firsts}"
    assert [c for _, c, _ in attempts(handle)] == ["KILLED", "KILLED", "KILLED", None]
    assert status.num_restarts == 3


def test_lost_supervisor_is_recovered_with_max_restarts_0(runner: Runner, tmp_path: Path) -> None:
    handle = runner.run(
        counter(30, 0.05), "managed", {"targets": ["local_cwd"], "controller": "local", "max_restarts": 0}
    )
    replica = pid_of(handle, 0)
    eventually(lambda: len(steps(handle)) >= 3, timeout=30)
    first = journal(handle).attempts[0].handle
    assert first is not None
    state = json.loads((tmp_path / "state" / parse_app_handle(first).app_id / "state.json").read_text())
    os.kill(int(state["pid"]), signal.SIGKILL)  # the attempt's supervisor: a lost node
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, (status, attempts(handle))
    assert attempts(handle)[0][1] == "NODE_FAILURE"
    assert not alive(replica), "the lost attempt's replica outlived it"
    order = [a for a, _ in steps(handle)]
    assert order == sorted(order), f"two attempts ran at once: {order}"
    assert (ckpt(handle) / "count").read_text() == "30"


def test_exit_1_with_max_restarts_2_is_three_attempts_and_failed(isolated: Path) -> None:
    run = run_cli(
        "run", "-s", "managed", "-cfg", "targets=local_cwd,controller=local,max_restarts=2",
        "utils.sh", "--", "sh", "-c", "echo attempt $TORCHX_ATTEMPT; exit 1",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://torchx/"), run.stdout
    assert "FAILED" in run_cli("wait", handle).stdout
    out = json.loads(run_cli("status", "--json", handle).stdout)
    assert out["state"] == "FAILED" and out["num_restarts"] == 2
    assert [(a["scheduler"], a["state"], a["cause"], a["exit_code"]) for a in out["attempts"]] == [
        ("local_cwd", "FAILED", "APP_ERROR", 1)
    ] * 3
    assert all(a["handle"].startswith("local_cwd://") and a["ended"] >= a["started"] for a in out["attempts"])
    text = run_cli("status", handle).stdout
    assert "Attempts:" in text and "max_restarts=2 used up" in text
    assert [line.split()[3:6] for line in text.splitlines() if line.strip().startswith("#")] == [
        ["FAILED", "APP_ERROR", "exit=1"]
    ] * 3
    logs = run_cli("log", handle).stdout
    assert [line.split()[-1] for line in logs.splitlines()] == ["0", "1", "2"]


def test_recover_on_exit_codes_restart_uncounted(runner: Runner) -> None:
    # the values a Python caller writes: ints for exit codes, a number of seconds for a duration
    cfg = {
        "targets": ["local_cwd"],
        "controller": "local",
        "max_restarts": 0,
        "recover_on_exit_codes": [33],
        "pending_timeout": 15,
    }
    handle = runner.run(counter(3, 0.01, "33,33,33,0"), "managed", cfg)
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, attempts(handle)
    assert [code for _, _, code in attempts(handle)] == [33, 33, 33, 0]


def test_cancel_stops_the_attempt_and_ends_cancelled(runner: Runner) -> None:
    handle = runner.run(
        counter(10_000, 0.05), "managed", {"targets": ["local_cwd"], "controller": "local", "max_restarts": 5}
    )
    pid = pid_of(handle, 0)
    eventually(lambda: len(steps(handle)) >= 2, timeout=30)
    runner.cancel(handle)
    status = runner.status(handle)
    assert status is not None and status.state == AppState.CANCELLED
    eventually(lambda: not alive(pid), timeout=10)
    time.sleep(0.5)
    assert attempts(handle) == [("CANCELLED", "CANCELLED", None)]
    assert (
        ManagedStore().driver_pid(parse_app_handle(handle).app_id) is None
        or eventually(lambda: ManagedStore().driver_pid(parse_app_handle(handle).app_id) is None, timeout=10) is None
    )


def test_driver_sigkilled_mid_run_is_resumed_by_the_next_look(runner: Runner) -> None:
    script = 'while [ ! -e "$TORCHX_CHECKPOINT_DIR/go" ]; do sleep 0.02; done; [ "$TORCHX_ATTEMPT" = 1 ]'
    app = command_app("sh", "-c", script, name="waiter")
    handle = runner.run(app, "managed", {"targets": ["local_cwd"], "controller": "local", "max_restarts": 1})
    store, job_id = ManagedStore(), parse_app_handle(handle).app_id
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30)
    driver = store.driver_pid(job_id)
    assert driver is not None
    os.kill(driver, signal.SIGKILL)
    eventually(lambda: store.driver_pid(job_id) is None, timeout=10)
    first = store.load(job_id).attempts[0].handle
    assert first is not None
    (ckpt(handle) / "go").touch()
    eventually(lambda: (s := runner.status(first)) is not None and s.state == AppState.FAILED, timeout=30)
    assert journal(handle).attempts[0].state is None  # ended while no driver watched it
    status = runner.wait(handle, wait_interval=0.1, timeout=60)  # a look: starts the driver again
    assert status is not None and status.state == AppState.SUCCEEDED, attempts(handle)
    assert attempts(handle) == [("FAILED", "APP_ERROR", 1), ("SUCCEEDED", None, 0)]


class _Receiver(http.server.BaseHTTPRequestHandler):
    got: list[dict[str, Any]] = []
    fail_first = 1

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(500)
        else:
            type(self).got.append(body)
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_notify_posts_every_state_change_to_a_loopback_receiver(runner: Runner) -> None:
    _Receiver.got, _Receiver.fail_first = [], 1  # the first POST fails: it is retried
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        handle = runner.run(
            counter(2, 0.01, "1,0"), "managed", {"targets": ["local_cwd"], "max_restarts": 1, "notify": url}
        )
        status = runner.wait(handle, wait_interval=0.1, timeout=60)
        assert status is not None and status.state == AppState.SUCCEEDED
        eventually(
            lambda: any(g.get("state") == "SUCCEEDED" and g["event"] == "job_state" for g in _Receiver.got), timeout=30
        )
    finally:
        server.shutdown()
    seen = [(g["event"], g.get("attempt"), g.get("state"), g.get("cause"), g.get("exit_code")) for g in _Receiver.got]
    assert seen == [
        ("job_state", None, "RUNNING", None, None),
        ("attempt_started", 0, None, None, None),
        ("attempt_ended", 0, "FAILED", "APP_ERROR", 1),
        ("attempt_started", 1, None, None, None),
        ("attempt_ended", 1, "SUCCEEDED", None, 0),  # a success has no failure cause
        ("job_state", None, "SUCCEEDED", None, None),
    ]
    assert all(g["job"] == handle for g in _Receiver.got)
    assert len(journal(handle).notified) == 6
    assert [a.as_json()["cause"] for a in journal(handle).attempts] == ["APP_ERROR", None]  # status --json


def test_sweep_over_managed(isolated: Path) -> None:
    run = run_cli(
        "sweep",
        "-s",
        "managed",
        "-cfg",
        "targets=local_cwd,controller=local",
        "--param",
        "msg=a,b,c",
        "--wait",
        "--json",
        "utils.echo",
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["state"] == "SUCCEEDED", out
    handles = [t["handle"] for t in out["trials"]]
    assert len(handles) == 3 and all(h.startswith("managed://torchx/") for h in handles)
    logs = sorted(run_cli("log", h).stdout.split()[-1] for h in handles)
    assert logs == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("cfg", "says"),
    [
        ("targets=", "targets is empty"),
        ("targets=nope", "'nope' is not an installed scheduler"),
        ("targets=managed", "cannot be its own target"),
        ("targets=local_cwd,max_restarts=-1", "max_restarts=-1"),
        ("targets=local_cwd,max_recoveries=-3", "max_recoveries=-3"),
        ("targets=local_cwd,pending_timeout=soon", "'soon' is not a duration"),
        ("targets=local_cwd,notify=ftp://example.com/x", "http:// or https://"),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(cfg: str, says: str, tmp_path: Path) -> None:
    run = run_cli("run", "-s", "managed", "-cfg", cfg, "utils.echo")
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchx: error:") and says in lines[0], run.stderr
    assert not (tmp_path / "managed").exists() or not os.listdir(tmp_path / "managed")
    assert not (tmp_path / "state").exists() or not [p for p in os.listdir(tmp_path / "state") if not p.startswith(".")]


def test_runner_api_and_torchxconfig_section(runner: Runner, isolated: Path, tmp_path: Path) -> None:
    logs = tmp_path / "target-logs"
    (isolated / ".torchxconfig").write_text(
        f"[managed]\ntargets = local_cwd\ncontroller = local\nmax_restarts = 1\nlog_dir = {logs}\n"
    )
    handle = runner.run(counter(2, 0.01, "1,0"), "managed")
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, attempts(handle)
    assert len(journal(handle).attempts) == 2  # max_restarts = 1 from the file
    ids = {parse_app_handle(str(a.handle)).app_id for a in journal(handle).attempts}
    assert {p.name for p in logs.glob("*/*")} == ids  # log_dir went to the target (<log_dir>/<session>/<app_id>)
    listed = {a.app_handle: a.state for a in runner.list("managed")}
    assert listed == {handle: AppState.SUCCEEDED}
    runner.delete(handle)
    assert runner.status(handle) is None
    assert all(runner.status(f"local_cwd://mtest/{i}") is None for i in ids)


def test_log_tail_follows_every_attempt_in_order_and_ends_with_the_job(runner: Runner) -> None:
    handle = runner.run(
        counter(3, 0.2, "1,1,0"), "managed", {"targets": ["local_cwd"], "controller": "local", "max_restarts": 2}
    )
    lines = [line.strip() for line in runner.log_lines(handle, "r", 0, should_tail=True)]
    status = runner.status(handle)
    assert status is not None and status.state == AppState.SUCCEEDED  # the tail ended with the job
    assert lines == [
        "attempt 0 starts",
        "attempt 1 starts",
        "attempt 2 starts",
        "attempt 2 resumes at 0",
        "attempt 2 done at 3",
    ]


def test_driver_killed_between_submitting_and_started_adopts_the_attempt(runner: Runner) -> None:
    from torchx_managed.attempts import attempt_name, dryrun_attempt, load_app

    script = 'while [ ! -e "$TORCHX_CHECKPOINT_DIR/go" ]; do sleep 0.02; done; [ "$TORCHX_ATTEMPT" = 1 ]'
    handle = runner.run(
        command_app("sh", "-c", script, name="inflight"),
        "managed",
        {"targets": ["local_cwd"], "controller": "local", "max_restarts": 1},
    )
    store, job_id = ManagedStore(), parse_app_handle(handle).app_id
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30)
    driver = store.driver_pid(job_id)
    assert driver is not None
    os.kill(driver, signal.SIGKILL)
    eventually(lambda: store.driver_pid(job_id) is None, timeout=10)
    state = store.load(job_id)
    first = state.attempts[0].handle
    assert first is not None
    # what the killed driver had done: journaled attempt 0's end and attempt 1's submission, and
    # submitted it, but was killed before journaling its handle
    (ckpt(handle) / "go").touch()
    eventually(lambda: (s := runner.status(first)) is not None and s.state == AppState.FAILED, timeout=30)
    name = attempt_name(job_id, 1)
    store.append(
        job_id, {"ev": "ended", "n": 0, "state": "FAILED", "cause": "APP_ERROR", "exit_code": 1, "t": time.time()}
    )
    store.append(job_id, {"ev": "submitting", "n": 1, "target": "local_cwd", "name": name, "t": time.time()})
    info = dryrun_attempt(runner, load_app(state.spec["app"]), state.spec, 1, "local_cwd", str(ckpt(handle)))
    in_flight = runner.schedule(info)
    status = runner.wait(handle, wait_interval=0.1, timeout=60)  # a look: the driver resumes
    assert status is not None and status.state == AppState.SUCCEEDED, attempts(handle)
    assert [a.handle for a in journal(handle).attempts] == [first, in_flight]  # adopted, not submitted again
    assert [a.app_handle for a in runner.list("local_cwd") if a.name == name] == [in_flight]


def test_cancel_while_a_submission_was_in_flight_submits_nothing(runner: Runner) -> None:
    from torchx_managed.attempts import attempt_name

    script = 'while [ ! -e "$TORCHX_CHECKPOINT_DIR/go" ]; do sleep 0.02; done; exit 1'
    handle = runner.run(
        command_app("sh", "-c", script, name="inflight"),
        "managed",
        {"targets": ["local_cwd"], "controller": "local", "max_restarts": 1},
    )
    store, job_id = ManagedStore(), parse_app_handle(handle).app_id
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30)
    os.kill(store.driver_pid(job_id) or 0, signal.SIGKILL)
    eventually(lambda: store.driver_pid(job_id) is None, timeout=10)
    first = store.load(job_id).attempts[0].handle
    assert first is not None
    (ckpt(handle) / "go").touch()
    eventually(lambda: (s := runner.status(first)) is not None and s.state == AppState.FAILED, timeout=30)
    # the killed driver had journaled attempt 0's end and attempt 1's submission; then a cancel came
    name = attempt_name(job_id, 1)
    store.append(
        job_id, {"ev": "ended", "n": 0, "state": "FAILED", "cause": "APP_ERROR", "exit_code": 1, "t": time.time()}
    )
    store.append(job_id, {"ev": "submitting", "n": 1, "target": "local_cwd", "name": name, "t": time.time()})
    store.append(job_id, {"ev": "cancel", "t": time.time()})
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.CANCELLED, attempts(handle)
    assert attempts(handle) == [("FAILED", "APP_ERROR", 1), ("CANCELLED", "CANCELLED", None)]
    assert not [a for a in runner.list("local_cwd") if a.name == name]


def test_an_explicit_checkpoint_dir_is_created_like_the_default(runner: Runner, tmp_path: Path) -> None:
    given = tmp_path / "not" / "there" / "yet"
    app = command_app("sh", "-c", 'test -d "$TORCHX_CHECKPOINT_DIR"', name="ckpt")  # fails where it is missing
    handle = runner.run(app, "managed", {"targets": ["local_cwd"], "controller": "local", "checkpoint_dir": str(given)})
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, attempts(handle)
    assert given.is_dir()


def test_a_crash_loop_backs_off_and_status_says_so(runner: Runner) -> None:
    app = command_app("sh", "-c", "exit 1", name="crash")
    cfg = {"targets": ["local_cwd"], "controller": "local", "max_restarts": 2, "restart_backoff": 2}
    handle = runner.run(app, "managed", cfg)
    eventually(lambda: journal(handle).attempts[0].state is not None, timeout=30)
    status = runner.status(handle)
    assert status is not None and status.state == AppState.RUNNING
    assert "restarting in" in status.msg and "after APP_ERROR (restart_backoff)" in status.msg, status.msg
    final = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert final is not None and final.state == AppState.FAILED
    tried = journal(handle).attempts
    gaps = [tried[i + 1].started - (tried[i].ended or 0.0) for i in range(len(tried) - 1)]
    assert len(gaps) == 2 and gaps[0] >= 2.0 and gaps[1] >= 4.0, gaps  # 2s, then doubled


def _processes_of(job_id: str) -> list[str]:
    """The processes whose command line or environment names the job (its driver, its attempts'
    supervisors and apps: TORCHX_CHECKPOINT_DIR is in the job's directory)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    if job_id.encode() in f.read():
                        found.append(f"{pid} ({part})")
                        break
            except OSError:  # gone, or not ours to read
                continue
    return found


def test_delete_after_the_driver_was_sigkilled_is_final(runner: Runner, tmp_path: Path) -> None:
    store = ManagedStore()
    app = command_app("sh", "-c", 'echo $$ > "$TORCHX_CHECKPOINT_DIR/pid"; exec sleep 600', name="deleted")
    jobs = []
    for _ in range(10):
        handle = runner.run(app, "managed", {"targets": ["local_cwd"], "controller": "local", "max_restarts": 3})
        jobs.append((handle, parse_app_handle(handle).app_id))
    for handle, job_id in jobs:
        pid_file = ckpt(handle) / "pid"
        eventually(lambda j=job_id, p=pid_file: p.exists() and (store.driver_pid(j) or 0) > 0, timeout=60)
        assert _processes_of(job_id)  # what the checks below look for is there to find
        os.kill(store.driver_pid(job_id) or 0, signal.SIGKILL)
        eventually(lambda j=job_id: store.driver_pid(j) is None, timeout=10)
    for handle, job_id in jobs:
        code, out, err = run_cli("delete", handle)
        assert code == 0 and "deleted" in out + err, (out, err)
        assert not os.path.exists(store.job_dir(job_id))
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # nothing of any of them runs, starts or comes back
        assert sorted(os.listdir(store.root)) == []
        for _, job_id in jobs:
            assert _processes_of(job_id) == [], job_id
        time.sleep(0.1)
    assert runner.list("managed") == []


def test_an_app_sigkilled_under_utils_sh_is_a_recovery(runner: Runner) -> None:
    from torchx_components.utils import sh

    script = 'echo $$ > "$TORCHX_CHECKPOINT_DIR/pid-$TORCHX_ATTEMPT"; [ "$TORCHX_ATTEMPT" = 1 ] || exec sleep 300'
    app = sh("sh", "-c", script)  # the wrapper's shell waits for this one, and exits 128+N when it is killed
    handle = runner.run(
        app, "managed", {"targets": ["local_cwd"], "controller": "local", "max_restarts": 0, "max_recoveries": 1}
    )
    os.kill(pid_of(handle, 0), signal.SIGKILL)
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, attempts(handle)
    assert attempts(handle) == [("FAILED", "KILLED", 137), ("SUCCEEDED", None, 0)]
