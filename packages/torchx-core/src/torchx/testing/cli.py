"""Running the ``torchx`` command line in a subprocess, as a test of it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from torchx.util.record import record


@record(frozen=True)
class CliResult:
    """What a ``torchx`` run returned; unpacks as ``code, out, err``."""

    returncode: int
    stdout: str
    stderr: str


def _run(argv: list[str], cwd: str | os.PathLike[str] | None, env: dict[str, str] | None, timeout: float) -> CliResult:
    proc = subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout, check=False
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_cli(
    *args: str, cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> CliResult:
    """Runs ``python -m torchx ARGS`` with this interpreter, in ``cwd``, with the process
    environment plus ``env``."""
    return _run([sys.executable, "-m", "torchx", *args], cwd, env, timeout)


def run_torchx(
    *args: str, cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> CliResult:
    """Runs the installed ``torchx`` command (the console script next to this interpreter) the
    way a user does: unlike :func:`run_cli`, the working directory is not on ``sys.path``."""
    return _run([str(Path(sys.executable).with_name("torchx")), *args], cwd, env, timeout)
