"""The managed scheduler's tests that need other distributions (local_cwd, local_docker,
torchx-components): each test in its own HOME, cwd and managed state, as in torchx-managed's
own tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.testing import isolate


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs each test in ``tmp_path/work`` with its own HOME and managed state; yields the cwd."""
    work = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("TORCHX_MANAGED_STATE_DIR", str(tmp_path / "managed"))
    for name in list(os.environ):
        if name.startswith(("TORCHX_TRACKER", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID", "TORCHX_ATTEMPT")):
            monkeypatch.delenv(name)
    return work


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory under /tmp that every client and the jobs' processes see (which may run as
    other users); it holds a copy of torchx-managed's test app ``counter.py``."""
    path = Path(tempfile.mkdtemp(prefix="torchx-managed-live-"))
    path.chmod(0o777)
    shutil.copy(Path(__file__).parents[2] / "packages" / "torchx-managed" / "tests" / "counter.py", path / "counter.py")
    yield path
    shutil.rmtree(path, ignore_errors=True)
