"""Test isolation: own HOME, cwd, caches, a fresh plugin registry, and this interpreter first on PATH."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from torchx.testing import isolate

#: directory of this interpreter's scripts (python, torchrun), put first on PATH for jobs
BIN_DIR = os.path.dirname(sys.executable)


def pytest_configure(config: pytest.Config) -> None:
    # also declared in the workspace pyproject.toml; repeated so the package's tests run on their own
    config.addinivalue_line("markers", "torch: needs PyTorch (CPU build) installed")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs each test in ``tmp_path/work`` with its own HOME and caches; yields the work dir."""
    work = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", BIN_DIR + os.pathsep + os.environ.get("PATH", ""))
    return work
