"""The replica process the actor runs (plain Python: tested without Ray)."""

from __future__ import annotations

import signal
import sys
import time

import pytest
from torchx.testing import alive
from torchx_sched_ray.torchx_ray_driver.placeholders import IMG_ROOT, RANK0_HOST, REPLICA_ID
from torchx_sched_ray.torchx_ray_driver.replica import ReplicaProcess


def drain(proc: ReplicaProcess, timeout: float = 20) -> tuple[list[tuple[str, str, bool]], int, bool]:
    lines: list[tuple[str, str, bool]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got, code, stopped = proc.poll(0.2)
        lines += [(s, text, nl) for s, _, text, nl in got]
        if code is not None:
            got, _, _ = proc.poll(0)
            lines += [(s, text, nl) for s, _, text, nl in got]
            return lines, code, stopped
    raise AssertionError(f"the replica did not end: {lines}")


def test_runs_argv_without_a_shell_and_fills_placeholders(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    code = (
        "import os, sys; print(sys.argv[1:]); print(os.environ['R'], os.environ['H'], file=sys.stderr);"
        " sys.stdout.write('no newline'); sys.exit(3)"
    )
    proc = ReplicaProcess()
    argv = [sys.executable, "-c", code, "$(id)", f"k={REPLICA_ID}", f"{IMG_ROOT}/d", ""]
    proc.start(argv, {"R": REPLICA_ID, "H": RANK0_HOST}, 7, "10.1.2.3")
    lines, exit_code, stopped = drain(proc)
    assert exit_code == 3
    assert not stopped
    assert ("o", repr(["$(id)", "k=7", f"{tmp_path}/d", ""]), True) in lines
    assert ("e", "7 10.1.2.3", True) in lines
    assert ("o", "no newline", False) in lines


def test_stop_terminates_the_process_group() -> None:
    proc = ReplicaProcess()
    pid = proc.start(["bash", "-c", "sleep 300 & echo $!; wait"], {}, 0, "h")
    child = 0
    deadline = time.monotonic() + 10
    while not child and time.monotonic() < deadline:
        got, _, _ = proc.poll(0.2)
        child = next((int(text) for _, _, text, _ in got), 0)
    proc.stop(grace=1.0)
    _, exit_code, stopped = drain(proc)
    assert stopped
    assert exit_code == -signal.SIGTERM
    time.sleep(0.2)
    assert not alive(pid)
    assert not alive(child)


def test_a_command_that_cannot_start() -> None:
    with pytest.raises(OSError, match="cannot start 'no-such-command-xyz'"):
        ReplicaProcess().start(["no-such-command-xyz"], {}, 0, "h")


def test_the_actor_sigkilled_takes_the_replicas_children_along(tmp_path: object) -> None:
    """The actor's process (here a plain Python process hosting a ReplicaProcess) is SIGKILLed:
    the replica's process dies by PDEATHSIG, and its forked child by the group watcher."""
    import os
    import subprocess

    host = (
        "import sys, time; from torchx_sched_ray.torchx_ray_driver.replica import ReplicaProcess;"
        " p = ReplicaProcess(); print(p.start(['sh', '-c', 'sleep 300 & echo $!; wait'], {}, 0, 'h'), flush=True);"
        " lines = []\n"
        "while not lines: lines, _, _ = p.poll(0.2)\n"
        "print(lines[0][2], flush=True); time.sleep(300)"
    )
    actor = subprocess.Popen([sys.executable, "-c", host], stdout=subprocess.PIPE, text=True)
    assert actor.stdout is not None
    pid, child = int(actor.stdout.readline()), int(actor.stdout.readline())
    assert alive(pid) and alive(child)
    os.kill(actor.pid, signal.SIGKILL)
    actor.wait()
    deadline = time.monotonic() + 5
    while (alive(pid) or alive(child)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), "the replica's process outlived its actor"
    assert not alive(child), "the replica's child outlived its actor"
