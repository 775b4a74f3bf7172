"""Timing whole processes in an isolated sandbox, and summarising samples."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.envs import Venv

#: one process may not take longer than this (seconds)
PROCESS_TIMEOUT = 180


@dataclass
class Stats:
    """Summary of timing samples (seconds)."""

    median: float
    p90: float
    n: int

    @staticmethod
    def of(samples: list[float]) -> Stats:
        """Median and 90th percentile (nearest rank) of ``samples``."""
        if not samples:
            raise ValueError("no samples")
        ordered = sorted(samples)
        p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]
        return Stats(statistics.median(ordered), p90, len(ordered))


class Sandbox:
    """Temp HOME, XDG dirs, TMPDIR, cwd and per-scenario local-scheduler state dirs.

    The cwd has no ``.torchxconfig``; the environment is built from scratch (no PYTHON*
    variables, no pyenv shims on PATH).
    """

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="torchx-bench-")
        self.root = Path(self._tmp.name)
        self.home = self.root / "home"
        self.cwd = self.root / "cwd"
        self.tmp = self.root / "tmp"
        for d in (
            self.home,
            self.cwd,
            self.tmp,
            self.home / ".cache",
            self.home / ".config",
            self.home / ".local" / "state",
        ):
            d.mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        """Removes every file the benchmarks made."""
        self._tmp.cleanup()

    def state_dir(self, name: str) -> Path:
        """A fresh local-scheduler state dir for ``name``."""
        path = self.root / "state" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def env(self, venv: Venv, state: str = "default", **extra: str) -> dict[str, str]:
        """The environment of a benchmarked process running in ``venv``."""
        env = {
            "PATH": f"{venv.path / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.tmp),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "TORCHX_LOCAL_STATE_DIR": str(self.state_dir(state)),
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        env.update(extra)
        return env


@dataclass
class Cmd:
    """One benchmarked command."""

    label: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass
class Runs:
    """The timed runs of one :class:`Cmd`."""

    seconds: list[float] = field(default_factory=list)
    stdouts: list[str] = field(default_factory=list)
    stderrs: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def stats(self) -> Stats | None:
        """Median/p90 of the successful runs (None if it failed)."""
        return None if self.error or not self.seconds else Stats.of(self.seconds)


def _describe_failure(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout or "").strip().splitlines() if ln.strip()]
    return f"exit {proc.returncode}: {lines[-1][:200] if lines else '(no output)'}"


def run_once(cmd: Cmd, timeout: float = PROCESS_TIMEOUT) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Runs ``cmd`` once; returns its wall time and result."""
    start = time.perf_counter()
    proc = subprocess.run(
        cmd.argv,
        cwd=cmd.cwd,
        env=cmd.env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        check=False,
    )
    return time.perf_counter() - start, proc


def time_commands(cmds: list[Cmd], repeat: int, warmup: int, log: Callable[[str], None]) -> dict[str, Runs]:
    """Times every command ``repeat`` times after ``warmup`` untimed runs.

    The commands alternate within each repetition, and the order flips every repetition,
    so slow drifts of the (shared, noisy) machine hit all of them alike. A command that
    fails stops being run; its :class:`Runs` carries the error.
    """
    results = {c.label: Runs() for c in cmds}
    for rep in range(warmup + repeat):
        order = cmds if rep % 2 == 0 else cmds[::-1]
        for cmd in order:
            runs = results[cmd.label]
            if runs.error:
                continue
            try:
                seconds, proc = run_once(cmd)
            except subprocess.TimeoutExpired:
                runs.error = f"timed out after {PROCESS_TIMEOUT} s"
                continue
            if proc.returncode != 0:
                runs.error = _describe_failure(proc)
                log(f"{cmd.label}: {runs.error}")
                continue
            if rep >= warmup:
                runs.seconds.append(seconds)
                runs.stdouts.append(proc.stdout)
                runs.stderrs.append(proc.stderr)
    return results


def run_probe(
    venv: Venv, probe: Path, args: list[str], env: dict[str, str], cwd: Path, timeout: float = PROCESS_TIMEOUT
) -> dict[str, Any]:
    """Runs the in-venv timing script ``probe`` with ``args``; returns the JSON it wrote.

    Raises:
        RuntimeError: the probe failed (the message has the last line of its stderr)
    """
    fd, out = tempfile.mkstemp(suffix=".json", dir=env.get("TMPDIR"))
    os.close(fd)
    try:
        cmd = Cmd("probe", [venv.python, str(probe), "--out", out, *args], env, cwd)
        try:
            _, proc = run_once(cmd, timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"probe {args[0]} timed out after {timeout:.0f} s") from None
        if proc.returncode != 0:
            raise RuntimeError(f"probe {args[0]} failed ({_describe_failure(proc)})")
        with open(out) as f:
            result: dict[str, Any] = json.load(f)
        return result
    finally:
        os.unlink(out)
