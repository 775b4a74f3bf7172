"""Cross-package tests: isolated HOME, cwd, caches and local scheduler state per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.testing import isolate


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def torchx(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs the installed ``torchx`` CLI."""
    exe = Path(sys.executable).with_name("torchx")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, cwd=cwd, env=dict(os.environ), timeout=timeout
    )
