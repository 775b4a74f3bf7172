"""Runs Slurm's commands (``sbatch``, ``squeue``, ``sacct``, ``scancel``) with clear errors."""

from __future__ import annotations

import subprocess

#: seconds any one Slurm command may take (slurmctld answers in milliseconds when healthy)
TIMEOUT = 60.0


class SlurmCommandError(RuntimeError):
    """A Slurm command failed; the message holds the command, its exit code and its stderr."""

    def __init__(self, cmd: list[str], returncode: int, stderr: str) -> None:
        detail = stderr.strip() or "(no output)"
        super().__init__(f"`{' '.join(cmd[:2])} ...` failed with exit code {returncode}: {detail}")
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr


def run(
    cmd: list[str], input: str | None = None, cwd: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs ``cmd`` and returns its result (text).

    Raises:
        FileNotFoundError: the command is not on PATH (the Slurm client is not installed)
        SlurmCommandError: it exited non-zero and ``check`` is set
    """
    try:
        proc = subprocess.run(
            cmd,
            input=input,
            cwd=cwd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{cmd[0]!r} is not on PATH: the slurm scheduler needs the Slurm client commands"
            " (sbatch, squeue, sacct, scancel), e.g. `apt-get install slurm-client`"
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmCommandError(
            cmd, -1, f"no answer within {TIMEOUT:.0f}s; is slurmctld up (`scontrol ping`)?"
        ) from None
    if check and proc.returncode != 0:
        raise SlurmCommandError(cmd, proc.returncode, proc.stderr)
    return proc
