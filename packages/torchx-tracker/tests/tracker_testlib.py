"""Helpers shared by the torchx-tracker tests (a unique module name: test sessions span packages)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def write_torchxconfig(directory: Path, tracker_dir: str, name: str = "fsspec") -> Path:
    """Writes a ``.torchxconfig`` selecting the fsspec tracker at ``tracker_dir``."""
    path = directory / ".torchxconfig"
    path.write_text(f"[torchx:tracker]\n{name} =\n\n[tracker:{name}]\nconfig = {tracker_dir}\n")
    return path


def run_torchx(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m torchx ARGS`` in ``cwd`` with the test's environment (its HOME) plus ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "torchx", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
