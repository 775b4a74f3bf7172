"""How a TorchX user runs things: the ``torchx`` command and their own python scripts, in a
directory of their own (the ``isolated`` fixture of tests/conftest.py gives each test one)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def torchx(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the installed ``torchx`` command."""
    exe = Path(sys.executable).with_name("torchx")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=180
    )


def script(path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Writes a user's python script to ``path`` and runs it (from its directory)."""
    path.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, cwd=path.parent, timeout=180
    )


def write(path: Path, text: str) -> Path:
    """Writes a (dedented) file the user would have, e.g. a ``.torchxconfig``."""
    path.write_text(textwrap.dedent(text))
    return path
