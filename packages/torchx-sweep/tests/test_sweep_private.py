"""Issue 20 point 4: a sweep's state is private like a job's (its spec holds ``--env`` values),
whatever the umask, and ``sweep resume`` refuses a spec that other users can write."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner import Runner, get_runner
from torchx_sweep import run_sweep
from torchx_sweep.store import SweepStore


@pytest.fixture
def runner(sched: str) -> Iterator[Runner]:
    with get_runner("sweeptest") as r:
        yield r


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277], ids=oct)
def test_sweep_state_is_private_whatever_the_umask(
    sched: str, runner: Runner, components: str, tmp_path: Path, umask: int
) -> None:
    old = os.umask(umask)
    try:
        sweep = run_sweep(runner, f"{components}:argv", [], [{"a": "x", "b": "1"}], sched)
        status = sweep.wait(timeout=60)
    finally:
        os.umask(old)
    assert status["state"] == "SUCCEEDED", status
    root = Path(SweepStore().root)
    modes = _modes(root)
    assert {"spec.json", "events.jsonl", "driver.lock", "driver.log"} <= {Path(p).name for p in modes}
    for path, mode in modes.items():
        expected = 0o700 if (root / path).is_dir() else 0o600
        assert mode == expected, (path, oct(mode), modes)


@pytest.mark.parametrize("target", ["spec.json", "events.jsonl", ""], ids=["spec", "journal", "dir"])
def test_resume_refuses_a_sweep_others_can_write(sched: str, components: str, tmp_path: Path, target: str) -> None:
    with get_runner("sweeptest") as runner:
        sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "30"], [{"a": "x", "b": "1"}], sched)
        store = SweepStore()
        deadline = time.monotonic() + 30
        while not sweep.trials()[0].handle:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        pid = store.driver_pid(sweep.sweep_id)
        assert pid and pid > 0
        os.kill(pid, signal.SIGKILL)
        while sweep.driver_alive():
            time.sleep(0.01)
        path = Path(store.sweep_dir(sweep.sweep_id), target)
        os.chmod(path, stat.S_IMODE(path.stat().st_mode) | 0o002)
        proc = subprocess.run(
            [sys.executable, "-m", "torchx.cli.main", "sweep", "resume", sweep.handle],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 1, proc
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith(f"torchx: error: {path} can be written by other users"), line
        assert not sweep.driver_alive()
        os.chmod(path, stat.S_IMODE(path.stat().st_mode) & ~0o002)
        assert sweep.resume()
        sweep.cancel()
