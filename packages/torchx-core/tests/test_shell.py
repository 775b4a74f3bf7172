"""torchx.schedulers.shell: quoting with placeholders, argv rendering, and the bash pieces
batch scripts share (run in bash here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from torchx.schedulers.shell import (
    RUN_SPLIT,
    argv_renderer,
    placeholder,
    shell_word,
    validate_shell_app,
    wait_for_replicas,
)
from torchx.specs import macros
from torchx.specs.roles import AppDef, Role


def test_shell_word_quotes_and_expands_placeholders() -> None:
    job = placeholder("job")
    assert shell_word("", {}) == "''"
    assert shell_word("a b", {}) == "'a b'"
    assert shell_word(f"x{job}y", {job: '"$JOB"'}) == 'x"$JOB"y'
    assert shell_word(f"{job}", {job: '"$JOB"'}) == '"$JOB"'


def test_argv_renderer_fills_macros_per_replica() -> None:
    role = Role("r", image="/img", entrypoint="echo", args=[macros.app_id, macros.replica_id, "it's"], env={"K": "$$v"})
    render = argv_renderer(role, '"$JOB"')
    assert render(3) == "env -- 'K=$v' echo \"$JOB\" 3 'it'\"'\"'s'"
    fixed = argv_renderer(Role("r", image="/img", entrypoint="true"), '"$JOB"')
    assert fixed(0) == fixed(9) == "env -- true"


def test_validate_shell_app() -> None:
    with pytest.raises(ValueError, match="not a valid variable name"):
        validate_shell_app(AppDef("a", [Role("r", image="i", entrypoint="x", env={"A-B": "1"})]))
    with pytest.raises(ValueError, match="NUL"):
        validate_shell_app(AppDef("a", [Role("r", image="i", entrypoint="x", args=["a\0b"])]))


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_wait_for_replicas_counts_simultaneous_exits(tmp_path: Path) -> None:
    # replicas under run_split that end together: a bare `wait -n` loop loses some (exit 127)
    start = RUN_SPLIT + "\npids=()\n"
    start += "".join(f"run_split r{i} bash -c 'echo {i}' >>r{i}.log 2>&1 & pids+=($!)\n" for i in range(8))
    for _ in range(10):
        proc = bash(start + "\n".join(wait_for_replicas()) + '\nexit "$rc"', tmp_path)
        assert proc.returncode == 0, proc.stderr


def test_wait_for_replicas_first_failure_stops_the_others(tmp_path: Path) -> None:
    start = "pids=()\nsleep 60 & pids+=($!)\n(sleep 0.2; exit 3) & pids+=($!)\n"
    proc = bash(start + "\n".join(wait_for_replicas()) + '\nexit "$rc"', tmp_path)
    assert proc.returncode == 3
    assert "stopping the others" in proc.stderr


def test_run_split_copies_each_stream_and_passes_both_on(tmp_path: Path) -> None:
    cmd = "echo o1; sleep 0.1; echo e1 >&2; sleep 0.1; echo o2; exit 4"
    proc = bash(f"{RUN_SPLIT}\nrun_split r bash -c '{cmd}' >>r.log 2>&1\necho rc=$?", tmp_path)
    assert proc.stdout == "rc=4\n"
    assert (tmp_path / "r.out").read_text() == "o1\no2\n"
    assert (tmp_path / "r.err").read_text() == "e1\n"
    assert (tmp_path / "r.log").read_text() == "o1\ne1\no2\n"


HANDLES_TERM = (
    "import signal, sys, time\n"
    "def warned(*_):\n"
    "    open('ckpt', 'w').write('saved')\n"
    "    print('checkpointed', flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, warned)\n"
    "open('up', 'w').close()\n"
    "time.sleep(60)\n"
)


def _term_group_once_up(tmp_path: Path, cmd: list[str]) -> subprocess.Popen[str]:
    """Starts ``run_split r CMD`` in a process group of its own and, once CMD is up, sends the
    group SIGTERM (what Slurm does to every process of a step: a preemption, a time limit)."""
    script = f'{RUN_SPLIT}\nrun_split r "$@" >>r.log 2>&1'
    proc = subprocess.Popen(["bash", "-c", script, "bash", *cmd], cwd=tmp_path, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "up").exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the command did not start"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)
    return proc


def test_run_split_lets_the_command_handle_a_warning_signal(tmp_path: Path) -> None:
    # the wrapper and its copies survive the SIGTERM sent to the whole group; the command
    # checkpoints, prints and exits 0, and everything it printed is kept
    proc = _term_group_once_up(tmp_path, [sys.executable, "-c", HANDLES_TERM])
    assert proc.returncode == 0
    assert (tmp_path / "ckpt").read_text() == "saved"
    assert (tmp_path / "r.out").read_text() == (tmp_path / "r.log").read_text() == "checkpointed\n"


def test_run_split_dies_of_the_signal_its_command_died_of(tmp_path: Path) -> None:
    # a command without a handler dies of SIGTERM: so does the wrapper (as without it)
    proc = _term_group_once_up(tmp_path, ["bash", "-c", "touch up; exec sleep 60"])
    assert proc.returncode == -15
