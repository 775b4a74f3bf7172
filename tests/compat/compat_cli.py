"""Runs the installed ``torchx`` CLI the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def torchx(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``torchx ARGS...`` in the current directory and environment."""
    exe = Path(sys.executable).with_name("torchx")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=dict(os.environ), timeout=timeout)
