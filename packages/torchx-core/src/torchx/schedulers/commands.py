"""Runs a cluster's command-line client (``sbatch``, ``bsub``, ...) with clear errors."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

#: seconds one client command may take by default (a healthy controller answers in milliseconds)
TIMEOUT = 60.0


class CommandError(RuntimeError):
    """A client command failed; the message holds the command, its exit code and its stderr."""

    def __init__(self, cmd: list[str], returncode: int, stderr: str) -> None:
        detail = stderr.strip() or "(no output)"
        super().__init__(f"`{' '.join(cmd[:2])} ...` failed with exit code {returncode}: {detail}")
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr


def run_command(
    cmd: list[str],
    *,
    missing_hint: str,
    timeout_hint: str,
    input: str | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Runs ``cmd`` and returns its result (text; undecodable bytes replaced).

    Args:
        missing_hint: said when the command is not on PATH (what to install)
        timeout_hint: said when it does not answer within ``timeout`` (what to check)
        env: the command's whole environment (default: this process's)

    Raises:
        FileNotFoundError: the command is not on PATH
        CommandError: it exited non-zero and ``check`` is set, or it timed out
    """
    try:
        proc = subprocess.run(
            cmd,
            input=input,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise FileNotFoundError(f"{cmd[0]!r} is not on PATH: {missing_hint}") from None
    except subprocess.TimeoutExpired:
        raise CommandError(cmd, -1, f"no answer within {timeout:.0f}s; {timeout_hint}") from None
    if check and proc.returncode != 0:
        raise CommandError(cmd, proc.returncode, proc.stderr)
    return proc
