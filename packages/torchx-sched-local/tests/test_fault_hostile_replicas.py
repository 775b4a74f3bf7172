"""Fault injection, issue 20: replicas that do what a supervisor must survive.

A FIFO or ``/dev/zero`` left as the replica's error file (point 6); descendants in process
groups of their own (bash job control) and daemons that leave the session (point 3); a log
directory replaced with a symlink (point 8); output that is not UTF-8 or ends without a
newline (point 9).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import command_app, eventually, python_app
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.sessions import alive
from torchx_sched_local.supervisor import MAX_ERROR_FILE

_ERROR_FILE = "import os, sys\npath = os.environ['TORCHELASTIC_ERROR_FILE']\n"


@pytest.mark.parametrize(
    "make",
    [
        "os.mkfifo(path)",  # reading it would block for ever
        "os.symlink('/dev/zero', path)",  # reading it would never end
        "os.symlink('/dev/null', path)",
        "os.mkdir(path)",
    ],
    ids=["fifo", "dev-zero", "dev-null", "directory"],
)
def test_an_error_file_that_is_not_a_regular_file_is_ignored(sched: LocalScheduler, make: str) -> None:
    app_id = sched.submit(python_app(_ERROR_FILE + make + "\nsys.exit(3)\n", name="err"), {})
    started = time.monotonic()
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED, desc
    assert time.monotonic() - started < 10
    (replica,) = desc.roles_statuses[0].replicas
    assert json.loads(replica.structured_error_msg) == {"message": "r/0 exited with code 3", "exit_code": 3}
    assert len(desc.structured_error_msg) < 1000


def test_a_huge_error_file_is_cut_to_its_bound(sched: LocalScheduler) -> None:
    code = _ERROR_FILE + "open(path, 'w').write('e' * 10_000_000)\nsys.exit(1)\n"
    app_id = sched.submit(python_app(code, name="err"), {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED
    (replica,) = desc.roles_statuses[0].replicas
    assert replica.structured_error_msg == "e" * MAX_ERROR_FILE


# ---------------------------------------------------------------- point 3: descendants


def _bash_job_control(pidfile: Path, then: str) -> list[str]:
    """bash with job control (``set -m``): its background job gets a process group of its own."""
    script = f"set -m; sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}; {then}"
    return ["bash", "-c", script]


def _pgid_differs(pidfile: Path) -> int:
    eventually(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
    pid = int(pidfile.read_text())
    assert os.getpgid(pid) != os.getsid(pid)  # really in a group of its own, in the replica's session
    return pid


def test_a_background_job_in_its_own_group_dies_at_the_jobs_end(sched: LocalScheduler, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    app_id = sched.submit(command_app(*_bash_job_control(pidfile, "sleep 0.5; exit 0")), {})
    pid = _pgid_differs(pidfile)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    assert not alive(pid)
    assert "still run" not in desc.msg


def test_a_background_job_in_its_own_group_dies_on_cancel(sched: LocalScheduler, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    app_id = sched.submit(command_app(*_bash_job_control(pidfile, "wait")), {})
    pid = _pgid_differs(pidfile)
    started = time.monotonic()
    sched.cancel(app_id)
    assert time.monotonic() - started < 10
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED, desc
    assert not alive(pid)


def test_a_daemon_that_left_the_session_is_named_by_status(sched: LocalScheduler, tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    fd = os.open(os.devnull, os.O_RDWR)\n"
        "    for n in (0, 1, 2): os.dup2(fd, n)\n"
        "    open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
        "    time.sleep(300)\n"
        "    os._exit(0)\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
    )
    app_id = sched.submit(python_app(code, str(pidfile)), {})
    try:
        desc = sched.wait(app_id, timeout=30)
        eventually(pidfile.exists)
        daemon = int(pidfile.read_text())
        assert desc is not None and desc.state == AppState.SUCCEEDED, desc
        assert alive(daemon)  # it asked to outlive its parent: named, not killed
        assert f"processes its replicas started still run: pids {daemon} " in desc.msg, desc.msg
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    eventually(lambda: "still run" not in (sched.describe(app_id) or desc).msg)


# ---------------------------------------------------------------- point 9: byte-exact logs

_BYTES = b"ok\n\xff\xfe not utf-8 \xc3\n\xe2\x82\xac whole\nlast without newline"


def test_logs_come_back_as_the_bytes_written(sched: LocalScheduler) -> None:
    code = f"import sys\nsys.stdout.buffer.write({_BYTES!r})\n"
    app_id = sched.submit(python_app(code), {})
    assert sched.wait(app_id, timeout=30) is not None
    for stream in (Stream.STDOUT, Stream.COMBINED):
        lines = list(sched.log_iter(app_id, "r", 0, streams=stream))
        assert lines[-1] == "last without newline"
        assert "".join(lines).encode("utf-8", "surrogateescape") == _BYTES
    proc = subprocess.run(
        [sys.executable, "-m", "torchx", "log", f"local_cwd://test/{app_id}"],
        capture_output=True,
        env={**os.environ, "TORCHX_LOCAL_STATE_DIR": sched.store.root},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"".join(b"r/0 " + line for line in _BYTES.splitlines(keepends=True))


def test_a_restart_ends_the_previous_attempts_last_line(sched: LocalScheduler, tmp_path: Path) -> None:
    from torchx.specs import RetryPolicy

    marker = tmp_path / "second"
    code = (
        "import os, sys\n"
        "if not os.path.exists(sys.argv[1]):\n"
        "    open(sys.argv[1], 'w').close(); sys.stdout.write('first, cut'); sys.exit(1)\n"
        "sys.stdout.write('second\\nend')\n"
    )
    app = python_app(code, str(marker), max_retries=1, retry_policy=RetryPolicy.REPLICA)
    app_id = sched.submit(app, {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    assert list(sched.log_iter(app_id, "r", 0)) == ["first, cut\n", "second\n", "end"]


# ---------------------------------------------------------------- point 8: log directories


@pytest.mark.parametrize("level", ["replica", "role"])
def test_a_replica_replacing_its_log_dir_with_a_symlink_cannot_redirect_writes(
    sched: LocalScheduler, tmp_path: Path, level: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "0").mkdir()
    code = (
        "import os, shutil, sys, time\n"
        "print('before', flush=True)\n"
        "time.sleep(0.3)\n"  # the supervisor has stored it
        "mine = os.path.dirname(os.environ['TORCHELASTIC_ERROR_FILE'])\n"  # the replica's log directory
        "victim = mine if sys.argv[2] == 'replica' else os.path.dirname(mine)\n"
        "shutil.rmtree(victim)\n"
        "os.symlink(sys.argv[1], victim)\n"
        "for i in range(100):\n"
        "    print('after', i, flush=True)\n"
    )
    app_id = sched.submit(python_app(code, str(elsewhere), level), {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["0"]  # nothing written through the symlink
    assert re.search(r"r/0: \d+ bytes of output not stored \((ELOOP|ENOTDIR) on ", desc.msg), desc.msg
