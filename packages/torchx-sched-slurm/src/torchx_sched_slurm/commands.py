"""Runs Slurm's commands (``sbatch``, ``squeue``, ``sacct``, ``scancel``) with clear errors."""

from __future__ import annotations

import subprocess

from torchx.schedulers.commands import run_command


def run(
    cmd: list[str], input: str | None = None, cwd: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs ``cmd`` and returns its result (text).

    Raises:
        FileNotFoundError: the command is not on PATH (the Slurm client is not installed)
        torchx.schedulers.commands.CommandError: it exited non-zero and ``check`` is set
    """
    return run_command(
        cmd,
        input=input,
        cwd=cwd,
        check=check,
        missing_hint="the slurm scheduler needs the Slurm client commands (sbatch, squeue, sacct, scancel),"
        " e.g. `apt-get install slurm-client`",
        timeout_hint="is slurmctld up (`scontrol ping`)?",
    )
