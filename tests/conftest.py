"""Cross-package tests: isolated HOME, cwd, caches and local scheduler state per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
    monkeypatch.setenv("TORCHX_LOCAL_STATE_DIR", str(tmp_path / "local-state"))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.chdir(work)
    return work


def torchx(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs the installed ``torchx`` CLI."""
    exe = Path(sys.executable).with_name("torchx")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, cwd=cwd, env=dict(os.environ), timeout=timeout
    )
