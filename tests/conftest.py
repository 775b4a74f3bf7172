"""Cross-package tests: isolated HOME, cwd, caches and local scheduler state per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx.testing import isolate


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)
