"""Helpers shared by the tests of torchx-sched-local (real processes, no mocks)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

from torchx import specs


def app(
    *cmd: str, name: str = "t", role: str = "r", replicas: int = 1, image: str = "", **kwargs: object
) -> specs.AppDef:
    """A one-role app running ``cmd``."""
    return specs.AppDef(
        name,
        [
            specs.Role(
                role, image=image or os.getcwd(), entrypoint=cmd[0], args=list(cmd[1:]), num_replicas=replicas, **kwargs
            )
        ],  # type: ignore[arg-type]
    )


def py(code: str, **kwargs: object) -> specs.AppDef:
    """A one-role app running ``python -c code``."""
    return app(sys.executable, "-c", code, **kwargs)


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01) -> None:
    """Waits until ``check()`` is true; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        time.sleep(interval)


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -c code args`` (a separate launcher process) and returns its result."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m torchx ARGS`` and returns its result."""
    return subprocess.run(
        [sys.executable, "-m", "torchx", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
