"""``torchx run`` attached to a local_cwd job, interrupted for real: SIGINT (Ctrl-C), a second
SIGINT, and the reader of its output going away (``| head -1``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from torchx.specs import AppState
from torchx.testing import eventually, run_cli
from torchx_sched_local.local_scheduler import LocalScheduler

COMPONENT = '''
import torchx.specs as specs


def ticker() -> specs.AppDef:
    """Prints a line every 50 ms for a long time."""
    loop = "i=0; while [ $i -lt 100000 ]; do echo tick $i; i=$((i+1)); sleep 0.05; done"
    return specs.AppDef("ticker", [specs.Role("t", image=".", entrypoint="sh", args=["-c", loop])])


def stubborn() -> specs.AppDef:
    """Ignores SIGTERM (so a cancel takes the whole grace period)."""
    loop = "trap '' TERM; echo up; while true; do sleep 0.05; done"
    return specs.AppDef("stubborn", [specs.Role("s", image=".", entrypoint="sh", args=["-c", loop])])
'''


@pytest.fixture(autouse=True)
def component(isolated: Path) -> None:
    (isolated / "comp.py").write_text(textwrap.dedent(COMPONENT))


def _hangup_as_in_a_terminal() -> None:
    """SIGHUP at its default, as a terminal's shell starts a command: the test run itself may be
    under ``nohup`` (CI's was), and a CLI that inherits SIGHUP ignored rightly leaves it so."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start(*args: str, quiet: bool = True, nohup: bool = False) -> subprocess.Popen[str]:
    """``torchx run ARGS`` (``--quiet``: no status lines, so stderr holds only what is checked),
    started as from a terminal (or under ``nohup``: SIGHUP ignored)."""
    return subprocess.Popen(
        [sys.executable, "-m", "torchx", "run", *(["--quiet"] if quiet else []), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if nohup else _hangup_as_in_a_terminal,
    )


def _handle_and_first_line(proc: subprocess.Popen[str]) -> str:
    """Reads the handle, then waits until the job's output flows (the run is attached)."""
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()
    assert handle.startswith("local_cwd://torchx/"), handle
    assert proc.stdout.readline()  # the first line of the job's output
    return handle


def _holds_a_pidfd(pid: int) -> bool:
    """True once process ``pid`` has a pidfd open (local_cwd's wait selects on the supervisor's)."""
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)) == "anon_inode:[pidfd]":
                return True
        except OSError:
            pass
    return False


def _state(sched: LocalScheduler, handle: str) -> AppState:
    desc = sched.describe(handle.rsplit("/", 1)[1])
    assert desc is not None
    return desc.state


def test_ctrl_c_cancels_the_attached_job_and_prints_its_final_state(sched: LocalScheduler) -> None:
    proc = _start("-s", "local_cwd", "comp.py:ticker")
    handle = _handle_and_first_line(proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert f"torchx: cancelling {handle} (Ctrl-C again to exit at once)" in err
    assert err.strip().splitlines()[-1] == f"torchx: {handle} CANCELLED: cancelled"
    assert "Traceback" not in err
    assert _state(sched, handle) == AppState.CANCELLED


def test_a_second_ctrl_c_exits_at_once(sched: LocalScheduler) -> None:
    proc = _start("-s", "local_cwd", "-cfg", "stop_grace_period=4", "comp.py:stubborn")
    handle = _handle_and_first_line(proc)
    proc.send_signal(signal.SIGINT)
    assert proc.stderr is not None
    assert proc.stderr.readline().strip() == ""  # the line break after ^C
    assert proc.stderr.readline().startswith(f"torchx: cancelling {handle}")
    time.sleep(0.3)  # a person's second Ctrl-C comes this late at the earliest
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - t < 2.5  # at once, not after the 4 s grace period (bound: a loaded machine)
    assert proc.returncode == 130
    assert f"torchx: exiting without waiting; see `torchx status {handle}`" in err
    assert _state(sched, handle) == AppState.RUNNING  # the cancel goes on without the launcher
    eventually(lambda: _state(sched, handle) == AppState.CANCELLED, timeout=15)


def test_ctrl_c_never_touches_detached_jobs(sched: LocalScheduler) -> None:
    detached = run_cli("run", "--detach", "-s", "local_cwd", "comp.py:ticker")
    assert detached.returncode == 0, detached.stderr
    other = detached.stdout.strip()
    # --detach --wait: the run waits but does not own the job, so Ctrl-C only stops waiting
    waiting = _start("--detach", "--wait", "-s", "local_cwd", "comp.py:ticker")
    assert waiting.stdout is not None
    waited = waiting.stdout.readline().strip()
    eventually(lambda: _state(sched, waited) == AppState.RUNNING)
    waiting.send_signal(signal.SIGINT)
    _, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 130
    assert f"torchx: stopped waiting; {waited} goes on (`torchx cancel {waited}` stops it)" in err
    # `torchx wait` does not own the job either
    waiter = subprocess.Popen(
        [sys.executable, "-m", "torchx", "wait", "--quiet", other],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    eventually(lambda: _holds_a_pidfd(waiter.pid), timeout=30)  # it is blocked waiting on the supervisor
    waiter.send_signal(signal.SIGINT)
    _, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 130
    assert err == f"torchx: stopped waiting; {other} goes on\n"
    # an attached run interrupted next to them cancels only its own job
    attached = _start("-s", "local_cwd", "comp.py:ticker")
    mine = _handle_and_first_line(attached)
    attached.send_signal(signal.SIGINT)
    attached.communicate(timeout=30)
    assert _state(sched, mine) == AppState.CANCELLED
    assert _state(sched, other) == AppState.RUNNING
    assert _state(sched, waited) == AppState.RUNNING


def _only_status_lines(stderr: str, handle: str) -> bool:
    """True if ``stderr`` holds nothing but status lines (no error, no warning, no traceback)."""
    status_line = re.compile(rf"torchx: {re.escape(handle)} [A-Z]+  .*")  # `STATE  1 running  0:00`
    return all(status_line.fullmatch(line) for line in stderr.splitlines())


def test_a_closed_output_ends_the_run_quietly(sched: LocalScheduler) -> None:
    proc = _start("-s", "local_cwd", "comp.py:ticker", quiet=False)
    handle = _handle_and_first_line(proc)
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # `| head -2` exits
    assert proc.wait(timeout=30) == 141
    assert _only_status_lines(proc.stderr.read(), handle)
    assert _state(sched, handle) == AppState.CANCELLED


def test_head_in_a_shell_pipeline(sched: LocalScheduler) -> None:
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m torchx run -s local_cwd comp.py:ticker | head -1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 141
    handle = proc.stdout.strip()
    assert _only_status_lines(proc.stderr, handle), proc.stderr
    assert _state(sched, handle) == AppState.CANCELLED


def test_output_closed_before_the_handle_is_printed(sched: LocalScheduler) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchx", "run", "--quiet", "-s", "local_cwd", "comp.py:ticker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # `| true`
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 141
    assert err == ""
    (listed,) = sched.list()
    assert listed.state == AppState.CANCELLED


# ---------------------------------------------------------------- issue 20 point 5


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_cancel_like_ctrl_c(sched: LocalScheduler, sig: signal.Signals) -> None:
    proc = _start("-s", "local_cwd", "comp.py:ticker")
    handle = _handle_and_first_line(proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == f"torchx: {handle} CANCELLED: cancelled"
    assert "Traceback" not in err
    assert _state(sched, handle) == AppState.CANCELLED


def test_a_run_under_nohup_outlives_a_hangup(sched: LocalScheduler) -> None:
    """``nohup torchx run ...``: the SIGHUP of a closing terminal is ignored as asked (the job
    goes on, its output still flows); Ctrl-C still cancels it."""
    proc = _start("-s", "local_cwd", "comp.py:ticker", nohup=True)
    handle = _handle_and_first_line(proc)
    proc.send_signal(signal.SIGHUP)
    assert proc.stdout is not None
    for _ in range(20):  # 50 ms apart: a second with the run still attached
        assert proc.stdout.readline().startswith("t/0 tick ")
    assert proc.poll() is None
    assert _state(sched, handle) == AppState.RUNNING
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == f"torchx: {handle} CANCELLED: cancelled"


def _supervised_job(sched: LocalScheduler, known: set[str]) -> str | None:
    """A job not in ``known`` whose supervisor has recorded itself (it runs), or None."""
    for app_id in sched.store.app_ids():
        if app_id not in known and (sched.store.state(app_id) or {}).get("pid"):
            return app_id
    return None


def test_ctrl_c_as_the_supervisor_starts(sched: LocalScheduler) -> None:
    """SIGINT the moment the job's supervisor has recorded itself: the run is then on its way from
    the submission to following the job. A KeyboardInterrupt raised there escaped the code that
    cancels the job (13 times in 30 under load): the job ran on and its handle was never printed."""
    for _ in range(6):
        known = set(sched.store.app_ids())
        proc = _start("-s", "local_cwd", "comp.py:ticker")
        deadline = time.monotonic() + 30
        while (app_id := _supervised_job(sched, known)) is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert app_id is not None, err
        handle = f"local_cwd://torchx/{app_id}"
        assert proc.returncode == 130, err
        assert out.splitlines()[:1] == [handle], (out, err)
        assert err.strip().splitlines()[-1] == f"torchx: {handle} CANCELLED: cancelled"
        assert _state(sched, handle) == AppState.CANCELLED


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.2])
def test_ctrl_c_at_any_moment_leaves_no_job_running(sched: LocalScheduler, delay: float) -> None:
    """SIGINT at spread-out moments of the start-up, the submission included: either no job
    was created, or it is cancelled and its handle was printed."""
    proc = _start("-s", "local_cwd", "comp.py:ticker")
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    jobs = sched.list()
    assert len(jobs) <= 1
    if proc.returncode != 130:  # still in Python's own start-up (importing torchx): nothing was created
        assert proc.returncode == -signal.SIGINT or err.rstrip().endswith("KeyboardInterrupt"), err
        assert not jobs
        return
    assert "Traceback" not in err
    for job in jobs:
        eventually(lambda job=job: _state(sched, f"local_cwd://torchx/{job.app_id}") == AppState.CANCELLED)  # type: ignore[misc]
        assert f"local_cwd://torchx/{job.app_id}" in out, (out, err)
