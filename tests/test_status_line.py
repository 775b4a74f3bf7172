"""The live status line on a real terminal (a pty), with local_cwd jobs."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")


def run_on_a_terminal(*args: str, timeout: float = 60) -> tuple[int, str]:
    """Runs ``torchx ARGS`` with stdout and stderr on a pty; returns (exit code, what the terminal got)."""
    controller, terminal = pty.openpty()
    exe = Path(sys.executable).with_name("torchx")
    proc = subprocess.Popen([str(exe), *args], stdout=terminal, stderr=terminal, stdin=subprocess.DEVNULL)
    os.close(terminal)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    return proc.wait(timeout=timeout), b"".join(chunks).decode()


def test_attached_run_shows_a_live_line_and_the_output() -> None:
    code, screen = run_on_a_terminal("run", "-s", "local_cwd", "utils.sh", "--", "sh", "-c", "sleep 1.6; echo done")
    assert code == 0, screen
    assert "\r\x1b[KRUNNING  1 running  0:0" in screen
    assert "sh/0\x1b[0m done\r\n" in screen
    assert "SUCCEEDED" in screen


def test_quiet_run_and_wait_show_no_line() -> None:
    code, screen = run_on_a_terminal("run", "--quiet", "-s", "local_cwd", "utils.sh", "sleep", "1.2")
    assert code == 0, screen
    assert "\x1b[K" not in screen, screen


def test_wait_timeout_says_it_timed_out() -> None:
    handle = run_torchx("run", "--detach", "-s", "local_cwd", "utils.sh", "sleep", "5").stdout.strip()
    try:
        waited = run_torchx("wait", "--timeout", "0.5", handle)
        assert waited.returncode == 2
        assert f"timed out after 0.5 s waiting for {handle}; it is RUNNING" in waited.stderr
        code, screen = run_on_a_terminal("wait", "--timeout", "1.5", handle)
        assert code == 2, screen
        assert "\r\x1b[KRUNNING  1 running" in screen, screen
    finally:
        run_torchx("cancel", handle)
