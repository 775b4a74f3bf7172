"""Runs LSF's commands (``bsub``, ``bjobs``, ``bkill``, ``lsid``) with clear errors."""

from __future__ import annotations

import os
import subprocess

from torchx.schedulers.commands import run_command


def run(
    cmd: list[str], input: str | None = None, cwd: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs ``cmd`` (in ``cwd``, with ``$PWD`` set to it too) and returns its result (text).

    LSF records the submission directory from ``$PWD`` (OpenLava does; so the job runs
    where we say only if ``PWD`` says so as well).

    Raises:
        FileNotFoundError: the command is not on PATH (no LSF client here)
        torchx.schedulers.commands.CommandError: it exited non-zero and ``check`` is set
    """
    return run_command(
        cmd,
        input=input,
        cwd=cwd,
        env={**os.environ, "PWD": cwd} if cwd else None,
        check=check,
        missing_hint="the lsf scheduler needs the LSF client commands (bsub, bjobs, bkill);"
        " source your cluster's profile.lsf (OpenLava: env.sh) to put them on PATH",
        timeout_hint="is the cluster up (`lsid`, `bhosts`)?",
    )
