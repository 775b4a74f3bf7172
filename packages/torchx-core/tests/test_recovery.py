"""The in-job restart loop of :mod:`torchx.schedulers.recovery`, run by real bash: attempts
are a small shell command whose exit codes follow a plan, and the attempt log is read back."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from torchx.schedulers.causes import EndCause
from torchx.schedulers.recovery import RecoveryPolicy, read_attempt_log, restart_loop

#: one attempt: appends "attempt checkpoint-dir" to seen, then exits with the plan's code for
#: this attempt (PLAN="1 33 0": attempt 0 exits 1, ...; past the plan: 0), or holds (code h)
ATTEMPT = [
    'echo "$TORCHX_ATTEMPT $TORCHX_CHECKPOINT_DIR" >> seen',
    "set -- $PLAN",
    "shift $TORCHX_ATTEMPT 2>/dev/null || set --",
    "code=${1:-0}",
    'if [ "$code" = h ]; then sleep 30 & pids+=($!); else (exit "$code") & pids+=($!); fi',
    "rc=0",
    'for p in "${pids[@]}"; do wait "$p" || rc=$?; done',
    "pids=()",
    'if [ "${LOSE:-}" = "$TORCHX_ATTEMPT" ]; then tx_lost=1; fi',
]


def _script(tmp: Path, policy: RecoveryPolicy, lost_wait: int = 1) -> Path:
    lines = restart_loop(
        policy,
        ATTEMPT,
        log_path='"$PWD/job.attempts"',
        requeue_count="${REQUEUES:-0}",
        default_checkpoint_dir='"$PWD/ckpt"',
        lost_wait=lost_wait,
    )
    path = tmp / "job.sh"
    path.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    return path


def _run(tmp: Path, policy: RecoveryPolicy, plan: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(_script(tmp, policy))],
        cwd=tmp,
        env={**os.environ, "PLAN": plan, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _log(tmp: Path) -> list[tuple[int, str | None, str | None, int | None]]:
    log = read_attempt_log((tmp / "job.attempts").read_text())
    return [(a.n, a.state, a.cause, a.exit_code) for a in log.attempts]


def test_an_app_error_restarts_and_the_next_attempt_succeeds(tmp_path: Path) -> None:
    proc = _run(tmp_path, RecoveryPolicy(max_restarts=1), "1 0")
    assert proc.returncode == 0, proc.stderr
    assert _log(tmp_path) == [(0, "FAILED", "APP_ERROR", 1), (1, "SUCCEEDED", None, 0)]
    assert (tmp_path / "seen").read_text() == f"0 {tmp_path}/ckpt\n1 {tmp_path}/ckpt\n"
    assert (tmp_path / "ckpt").is_dir()
    assert read_attempt_log((tmp_path / "job.attempts").read_text()).final == "SUCCEEDED"


def test_max_restarts_used_up_exits_with_the_last_code(tmp_path: Path) -> None:
    proc = _run(tmp_path, RecoveryPolicy(max_restarts=1), "3 4 0")
    assert proc.returncode == 4
    assert "max_restarts=1 used up" in proc.stderr
    assert _log(tmp_path) == [(0, "FAILED", "APP_ERROR", 3), (1, "FAILED", "APP_ERROR", 4)]
    assert read_attempt_log((tmp_path / "job.attempts").read_text()).final == "FAILED"


def test_recover_on_exit_codes_restart_uncounted(tmp_path: Path) -> None:
    proc = _run(tmp_path, RecoveryPolicy(max_restarts=0, recover_on_exit_codes=(33,)), "33 33 0")
    assert proc.returncode == 0, proc.stderr
    assert [c for *_, c in _log(tmp_path)] == [33, 33, 0]


def test_a_kill_from_outside_counts_against_max_recoveries(tmp_path: Path) -> None:
    proc = _run(tmp_path, RecoveryPolicy(max_restarts=0, max_recoveries=1), "137 137 0")
    assert proc.returncode == 137
    assert _log(tmp_path) == [(0, "FAILED", "KILLED", 137), (1, "FAILED", "KILLED", 137)]
    # a crash (SIGSEGV) is the application's error
    crash = tmp_path / "crash"
    crash.mkdir()
    assert _run(crash, RecoveryPolicy(max_restarts=0), "139").returncode == 139
    assert _log(crash) == [(0, "FAILED", "APP_ERROR", 139)]


def test_a_requeued_job_records_the_lost_attempt_and_counts_on(tmp_path: Path) -> None:
    # the first run of the job dies with its node: SIGKILL while attempt 0 holds
    proc = subprocess.Popen(
        ["bash", str(_script(tmp_path, RecoveryPolicy(max_recoveries=1)))],
        cwd=tmp_path,
        env={**os.environ, "PLAN": "h 0"},
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while not (tmp_path / "seen").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # the backend starts the script again (a requeue): attempt 1 runs, attempt 0 reads LOST
    again = _run(tmp_path, RecoveryPolicy(max_recoveries=1), "h 0", REQUEUES="1")
    assert again.returncode == 0, again.stderr
    assert _log(tmp_path) == [(0, "FAILED", "NODE_FAILURE", None), (1, "SUCCEEDED", None, 0)]
    log = read_attempt_log((tmp_path / "job.attempts").read_text())
    assert log.lost == [0]
    log.name_lost([(EndCause.PREEMPTED, "PREEMPTED: Slurm requeued the job")])
    assert log.attempts[0].cause == "PREEMPTED"
    # one more lost run is over max_recoveries=1: the next start ends the job at once
    (tmp_path / "job.attempts").write_text((tmp_path / "job.attempts").read_text().replace("final SUCCEEDED", ""))
    with open(tmp_path / "job.attempts", "a") as f:
        f.write("start 2 2 1\n")
    third = _run(tmp_path, RecoveryPolicy(max_recoveries=1), "0", REQUEUES="2")
    assert third.returncode == 1 and "max_recoveries=1 used up" in third.stderr


def test_an_attempt_that_lost_a_replica_waits_for_the_requeue_then_goes_on(tmp_path: Path) -> None:
    proc = _run(tmp_path, RecoveryPolicy(max_recoveries=2), "0 0", LOSE="0")
    assert proc.returncode == 0, proc.stderr
    assert "lost a node" in proc.stderr
    assert _log(tmp_path) == [(0, "FAILED", "NODE_FAILURE", None), (1, "SUCCEEDED", None, 0)]


def test_a_crash_loop_backs_off_and_says_so(tmp_path: Path) -> None:
    began = time.monotonic()
    proc = _run(tmp_path, RecoveryPolicy(max_restarts=2, restart_backoff=1), "1 1 0")
    took = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    assert "restarting in 1s" in proc.stderr and "restarting in 2s" in proc.stderr
    assert took >= 3.0, "back-off of 1 s then 2 s"
    text = (tmp_path / "job.attempts").read_text()
    assert text.count("backoff ") == 2


def test_sigterm_ends_the_loop_without_a_new_attempt(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        ["bash", str(_script(tmp_path, RecoveryPolicy(max_restarts=5)))],
        cwd=tmp_path,
        env={**os.environ, "PLAN": "h h"},
    )
    deadline = time.monotonic() + 10
    while not (tmp_path / "seen").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    subprocess.run(["pkill", "-TERM", "-P", str(proc.pid), "sleep"], check=False)
    assert proc.wait(timeout=20) != 0
    assert (tmp_path / "seen").read_text().count("\n") == 1, "a new attempt started after SIGTERM"


def test_a_checkpoint_dir_reaches_the_attempt_as_data(tmp_path: Path) -> None:
    odd = str(tmp_path / "p'$(touch pwned)'x")
    proc = _run(tmp_path, RecoveryPolicy(checkpoint_dir=odd), "0")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "seen").read_text() == f"0 {odd}\n"
    assert os.path.isdir(odd) and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "text",
    [
        "start 0 0 10\nend 0 1 APP_ERROR 11\nstart 1 0 12\nend 1 0 SUCC",  # torn last line
        "start 0 0 10\nend 0 1 APP_ERROR 11\nstart 1 0 12\n\x00garbage\n",
    ],
)
def test_a_torn_or_garbled_log_is_read_up_to_what_is_whole(text: str) -> None:
    log = read_attempt_log(text)
    assert [(a.n, a.state) for a in log.attempts] == [(0, "FAILED"), (1, None)]
    assert log.attempts[0].started == 10 and log.attempts[0].ended == 11
