"""``torchx run --log`` on a scheduler that cannot follow logs (``capabilities.log_tail`` False)
prints the job's log once the job ended, on stderr as TorchX's ``--log`` does, instead of
nothing (issue 19). The scheduler is plugins/no_tail_sched: real local processes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_components")
pytest.importorskip("torchx_sched_local")

TORCHX = str(Path(sys.executable).with_name("torchx"))

#: prints a line, then waits for the test to create ``release`` before it prints another and ends
GATED_JOB = "echo line-one; touch started; while [ ! -e release ]; do sleep 0.05; done; echo line-two"


@pytest.fixture(autouse=True)
def no_tail_sched(use_dist: Callable[[str], Path]) -> None:
    use_dist("no_tail_sched")


def _wait_for_file(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, f"torchx ended before the job started (exit {proc.returncode})"
        assert time.monotonic() < deadline, f"the job never created {path.name}"
        time.sleep(0.05)


def test_log_printed_once_the_job_ended(isolated: Path) -> None:
    """Nothing is printed while the job runs (it cannot be followed); all of it once it ended."""
    proc = subprocess.Popen(
        [TORCHX, "run", "--log", "-s", "local_no_tail", "utils.sh", "--", "sh", "-c", GATED_JOB],
        cwd=isolated,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr, stdout = proc.stderr, proc.stdout
    assert stderr is not None and stdout is not None
    err_lines: list[tuple[float, str]] = []  # (when it arrived, line)
    reader = threading.Thread(target=lambda: err_lines.extend((time.monotonic(), ln.rstrip("\n")) for ln in stderr))
    reader.start()
    try:
        _wait_for_file(isolated / "started", proc)
        time.sleep(1.0)  # a following reader would have printed line-one by now
        released = time.monotonic()
        (isolated / "release").touch()
        out = stdout.read()
        rc = proc.wait(timeout=120)
    finally:
        (isolated / "release").touch()  # the job never outlives the test
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    err = "\n".join(line for _, line in err_lines)

    assert rc == 0, err
    handle = out.strip().splitlines()[0]
    assert handle.startswith("local_no_tail://"), out
    log = [(i, t) for i, (t, line) in enumerate(err_lines) if line.endswith(("line-one", "line-two"))]
    assert len(log) == 2, f"the job's log is not on stderr (once):\n{err}"
    (one, one_at), (two, _) = log
    assert err_lines[one][1].endswith("line-one") and one < two, err
    assert one_at >= released, f"line-one was printed while the job ran, yet the scheduler cannot follow:\n{err}"
    assert err_lines[-1][1].startswith(f"torchx: {handle} SUCCEEDED"), err  # the final state, after the log
    assert "line-" not in out  # `--log` writes the log on stderr only
    assert "Traceback" not in err and "cannot follow" not in err, err


def test_failed_job_log_and_exit_code(isolated: Path) -> None:
    """A job that fails: its log is still printed, then its state; the exit code is 1."""
    run = run_torchx("run", "--log", "-s", "local_no_tail", "utils.sh", "--", "sh", "-c", "echo went-wrong; exit 3")
    assert run.returncode == 1, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert "went-wrong" in run.stderr, run.stderr
    assert f"torchx: {handle} FAILED" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
