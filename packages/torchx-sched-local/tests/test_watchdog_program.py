"""The watchdog's shell program (``watchdog.WATCHDOG_SH``) run for real: what it does with the
supervisor's messages when the pipe closes, and that ``end`` makes it leave everything alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.testing import children, command_app, eventually
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.watchdog import PIPE_FD, WATCHDOG_SH


def _run(messages: bytes, tmp_path: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """Runs the program with ``messages`` on its pipe, then closes it; the Python watchdog it
    becomes is a script that prints its arguments. Returns them, and the two groups it was told of."""
    groups = [subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(2)]
    text = messages.replace(b"A", str(groups[0].pid).encode()).replace(b"B", str(groups[1].pid).encode())
    read_fd, write_fd = os.pipe()
    os.write(write_fd, text)
    os.close(write_fd)
    out = tmp_path / "out"
    printer = "import sys; print(' '.join(sys.argv[1:]))"
    argv = ["/bin/sh", "-c", WATCHDOG_SH, "torchx-watchdog", str(tmp_path / "job dir"), sys.executable, "-c", printer]
    with open(out, "wb") as f:
        pid = os.posix_spawn(
            "/bin/sh",
            argv,
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, read_fd, PIPE_FD), (os.POSIX_SPAWN_DUP2, f.fileno(), 1)],
        )
    os.close(read_fd)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    return out.read_text().strip(), groups


def test_a_closed_pipe_kills_the_live_groups_and_hands_them_on(tmp_path: Path) -> None:
    said, (a, b) = _run(b"+A\n+B\n-A\n+12x\n+\n", tmp_path)
    assert said == f"{b.pid} {tmp_path / 'job dir'}"  # A was reaped; the malformed lines are ignored
    assert b.wait(5) == -9  # SIGKILLed by the shell
    assert a.poll() is None  # not ours any more
    a.kill()
    a.wait()


def test_end_leaves_everything_alone(tmp_path: Path) -> None:
    said, groups = _run(b"+A\n+B\nend\n", tmp_path)
    assert said == ""  # exited, never became the Python watchdog
    assert all(g.poll() is None for g in groups)
    for g in groups:
        g.kill()
        g.wait()


def test_the_watchdog_shell_gets_no_startup_file_of_the_user(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bash as /bin/sh (some systems) would run $BASH_ENV first: the watchdog's environment lacks it."""
    monkeypatch.setenv("BASH_ENV", "/nonexistent/startup.sh")
    monkeypatch.setenv("ENV", "/nonexistent/startup.sh")
    app_id = sched.submit(command_app("sleep", "30"), {})
    try:
        eventually(lambda: (sched.store.state(app_id) or {}).get("pid") is not None)
        supervisor = (sched.store.state(app_id) or {})["pid"]
        eventually(lambda: len(children(supervisor)) == 2)
        (watchdog,) = [pid for pid in children(supervisor) if _cmdline(pid)[:1] == [b"/bin/sh"]]
        with open(f"/proc/{watchdog}/environ", "rb") as f:
            names = {entry.split(b"=", 1)[0] for entry in f.read().split(b"\0")}
        assert b"BASH_ENV" not in names and b"ENV" not in names
        assert b"PATH" in names  # the rest is kept (the Python watchdog may need LD_LIBRARY_PATH)
    finally:
        sched.cancel(app_id)


def _cmdline(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []
