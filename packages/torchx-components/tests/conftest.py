"""Test isolation: own HOME, cwd, caches, a fresh plugin registry, and this interpreter first on PATH."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torchx.plugins
from torchx.runner import config

#: directory of this interpreter's scripts (python, torchrun), put first on PATH for jobs
BIN_DIR = os.path.dirname(sys.executable)


def pytest_configure(config: pytest.Config) -> None:
    # also declared in the workspace pyproject.toml; repeated so the package's tests run on their own
    config.addinivalue_line("markers", "torch: needs PyTorch (CPU build) installed")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Runs each test in ``tmp_path/work`` with its own HOME and caches; yields the work dir."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
    monkeypatch.setenv("TORCHX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", BIN_DIR + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.chdir(work)
    config._parsed.clear()
    torchx.plugins.reset()
    yield work
    torchx.plugins.reset()
