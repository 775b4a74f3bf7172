"""Fault injection, issue 20 point 1: a full or read-only state directory when a job ends.

Real faults: the state directory on a 1 MiB tmpfs that the job's own logs fill, and a tmpfs
remounted read-only while the job runs. The job's true outcome must survive: written in the
room its ``state.json`` reserved (full disk), or held by the supervisor, which keeps the
job and retries, while ``status`` says the outcome and why it is not stored (read-only).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.specs import AppState
from torchx.testing import command_app, eventually, python_app, small_tmpfs, unmount
from torchx_sched_local import store
from torchx_sched_local.local_scheduler import LocalScheduler

WAIT_FOR_GO = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (unmounted afterwards)."""
    path = small_tmpfs(tmp_path / "disk")
    try:
        yield path
    finally:
        unmount(path)


@pytest.fixture
def view(tmp_path: Path) -> Iterator[Path]:
    """A state directory reached through a bind mount of a private directory; :func:`_read_only`
    stacks a read-only bind mount on it (what a filesystem remounted read-only does to new
    opens; a real remount is refused while the supervisor holds files open for writing)."""
    real = tmp_path / "real"
    path = tmp_path / "view"
    real.mkdir(mode=0o700)
    path.mkdir(mode=0o700)
    subprocess.run(["mount", "--bind", str(real), str(path)], check=True)
    try:
        yield path
    finally:
        for _ in range(3):
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def _read_only(path: Path) -> None:
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    # refused (busy) while a file is open for writing through the new mount: a state write in flight
    eventually(
        lambda: subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True).returncode == 0,
        timeout=10,
        interval=0.05,
    )


def _running_handed_over(sched: LocalScheduler, app_id: str) -> None:
    """Waits until the job runs in its fresh supervisor (the handover opens ``supervisor.log`` for
    writing: after a read-only mount it would keep the mount busy)."""

    def ready() -> bool:
        st = sched.store.state(app_id) or {}
        if st.get("state") != "RUNNING":
            return False
        try:
            with open(f"/proc/{st['pid']}/cmdline", "rb") as f:
                return b"_supervise.py" in f.read()
        except OSError:
            return False

    eventually(ready, timeout=30)


def _writable_again(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=True)  # lazily: the supervisor may have its cwd there


@pytest.fixture
def sched_on(request: pytest.FixtureRequest) -> Iterator[list[LocalScheduler]]:
    """Schedulers a test makes; their jobs are cancelled afterwards."""
    made: list[LocalScheduler] = []
    yield made
    for s in made:
        for resp in s.list():
            s.cancel(resp.app_id)
        s.close()


def _cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchx", *args],
        capture_output=True,
        text=True,
        env={**os.environ, store.STATE_DIR_ENV: str(state)},
        timeout=120,
        check=False,
    )


def test_logs_filling_the_state_dir_keep_the_true_outcome(disk: Path) -> None:
    state = disk / "state"
    sched = LocalScheduler("test", state_dir=str(state))
    code = "for i in range(3000):\n    print('%04d' % i + 'x' * 1000, flush=True)\n"
    app_id = sched.submit(python_app(code, name="fill"), {})  # logs in the job dir, on the same 1 MiB
    desc = sched.wait(app_id, timeout=120)
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED, desc.msg  # before: FAILED, "the job's supervisor died"
    assert re.search(r"r/0: \d+ bytes of output not stored \(ENOSPC on ", desc.msg), desc.msg
    stored = sched.store.state(app_id) or {}
    assert stored["state"] == "SUCCEEDED"
    assert stored["replicas"][0]["exit_code"] == 0
    assert not store.lock_is_held(sched.store.job_dir(app_id))
    sched.close()


def test_read_only_state_dir_at_the_end_is_said_then_stored(
    view: Path, tmp_path: Path, sched_on: list[LocalScheduler]
) -> None:
    state = view / "state"
    go = tmp_path / "go"
    sched = LocalScheduler("test", state_dir=str(state))
    sched_on.append(sched)
    app_id = sched.submit(python_app(WAIT_FOR_GO, str(go), name="ro"), {"log_dir": str(tmp_path / "logs")})
    _running_handed_over(sched, app_id)
    state_file = os.path.join(sched.store.job_dir(app_id), store.STATE_FILE)
    _read_only(view)
    go.touch()

    def said() -> bool:
        desc = sched.describe(app_id)
        return desc is not None and desc.state == AppState.SUCCEEDED

    eventually(said, timeout=30)
    desc = sched.describe(app_id)
    assert desc is not None
    assert f"SUCCEEDED could not be stored yet (EROFS on {state_file})" in desc.msg, desc.msg
    waited = sched.wait(app_id, timeout=30)
    assert waited is not None and waited.state == AppState.SUCCEEDED
    status = _cli(state, "status", f"local_cwd://test/{app_id}")
    assert status.returncode == 0, status
    assert "SUCCEEDED" in status.stdout and "EROFS on " in status.stdout, status
    cancel = _cli(state, "cancel", f"local_cwd://test/{app_id}")  # it ended: nothing to cancel, it says so
    assert cancel.returncode == 0, cancel
    assert (store.read_json(state_file) or {})["state"] == "RUNNING"  # not stored yet, the job is held
    assert store.lock_is_held(sched.store.job_dir(app_id))

    _writable_again(view)
    eventually(lambda: not store.lock_is_held(sched.store.job_dir(app_id)), timeout=30)
    stored = store.read_json(state_file)
    assert stored["state"] == "SUCCEEDED"
    assert stored["replicas"][0]["exit_code"] == 0
    assert "could not be stored" not in stored["msg"]
    sched.close()


def test_cancel_on_a_read_only_state_dir_is_one_clear_line(
    view: Path, tmp_path: Path, sched_on: list[LocalScheduler]
) -> None:
    state = view / "state"
    sched = LocalScheduler("test", state_dir=str(state))
    sched_on.append(sched)
    app_id = sched.submit(command_app("sleep", "300", name="roc"), {"log_dir": str(tmp_path / "logs")})
    _running_handed_over(sched, app_id)
    _read_only(view)
    proc = _cli(state, "cancel", f"local_cwd://test/{app_id}")
    assert proc.returncode == 0, proc
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"cancelled local_cwd://test/{app_id}"), line
    assert "CANCELLED could not be stored yet (EROFS on " in line, line
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED
    _writable_again(view)
    eventually(lambda: not store.lock_is_held(sched.store.job_dir(app_id)), timeout=30)
    assert (sched.store.state(app_id) or {})["state"] == "CANCELLED"
    sched.close()
