"""The watchdog's shell program (``watchdog.WATCHDOG_SH``) run for real: ``end`` makes it exit,
a pipe closed without it hands over to the Python watchdog; and what it is started with."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from torchx.testing import children, cmdline, command_app, eventually
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.watchdog import PIPE_FD, WATCHDOG_SH


def _run(messages: bytes, tmp_path: Path) -> str:
    """Runs the program with ``messages`` on its pipe, then closes it; the Python watchdog it
    becomes is a script that prints its arguments. Returns what it printed."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, messages)
    os.close(write_fd)
    out = tmp_path / "out"
    printer = "import sys; print(' '.join(sys.argv[1:]))"
    marker = str(tmp_path / "cancel")
    argv = [
        "/bin/sh",
        "-c",
        WATCHDOG_SH,
        "torchx-watchdog",
        marker,
        sys.executable,
        "-c",
        printer,
        str(tmp_path / "job dir"),
    ]
    with open(out, "wb") as f:
        pid = os.posix_spawn(
            "/bin/sh",
            argv,
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, read_fd, PIPE_FD), (os.POSIX_SPAWN_DUP2, f.fileno(), 1)],
        )
    os.close(read_fd)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    return out.read_text().strip()


def test_a_closed_pipe_hands_over_to_the_python_watchdog(tmp_path: Path) -> None:
    assert _run(b"", tmp_path) == str(tmp_path / "job dir")
    assert _run(b"en", tmp_path) == str(tmp_path / "job dir")  # a torn message is not "end"


def test_a_cancel_under_way_when_the_pipe_closed_is_passed_on(tmp_path: Path) -> None:
    (tmp_path / "cancel").touch()
    assert _run(b"", tmp_path) == f"{tmp_path / 'job dir'} cancelling"


def test_end_exits_without_acting(tmp_path: Path) -> None:
    assert _run(b"end\n", tmp_path) == ""


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
        (watchdog,) = [pid for pid in children(supervisor) if cmdline(pid)[:1] == ["/bin/sh"]]
        with open(f"/proc/{watchdog}/environ", "rb") as f:
            names = {entry.split(b"=", 1)[0] for entry in f.read().split(b"\0")}
        assert b"BASH_ENV" not in names and b"ENV" not in names
        assert b"PATH" in names  # the rest is kept (the Python watchdog may need LD_LIBRARY_PATH)
    finally:
        sched.cancel(app_id)
