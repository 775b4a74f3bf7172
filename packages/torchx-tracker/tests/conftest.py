"""Test isolation: a private HOME, cwd and plugin cache per test, no tracker env from outside."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import fsspec
import pytest
from torchx.testing import isolate

TRACKER_ENV_PREFIXES = ("TORCHX_TRACKER", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID", "TORCHXCONFIG")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs each test in ``tmp_path/work`` with ``HOME=tmp_path/home``; yields the cwd."""
    work = isolate(tmp_path, monkeypatch)
    for name in list(os.environ):
        if name.startswith(TRACKER_ENV_PREFIXES):
            monkeypatch.delenv(name)
    return work


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh ``memory://`` tracker root, removed afterwards."""
    root = f"memory://torchx-tracker-test-{uuid.uuid4().hex}"
    yield root
    fs, path = fsspec.core.url_to_fs(root)
    if fs.exists(path):
        fs.rm(path, recursive=True)


@pytest.fixture(params=["local", "memory"])
def tracker_root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A tracker root URL on the local filesystem and on ``memory://``."""
    if request.param == "local":
        yield str(tmp_path / "tracker")
    else:
        yield request.getfixturevalue("memory_root")


def _write_torchxconfig(directory: Path, tracker_dir: str) -> Path:
    path = directory / ".torchxconfig"
    path.write_text(f"[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = {tracker_dir}\n")
    return path


@pytest.fixture
def write_torchxconfig() -> Callable[[Path, str], Path]:
    """``write_torchxconfig(directory, tracker_dir)`` writes ``directory/.torchxconfig``
    selecting the fsspec tracker at ``tracker_dir``; returns its path."""
    return _write_torchxconfig


@pytest.fixture
def configured_store(tmp_path: Path, isolated: Path) -> str:
    """A tracker root (``tmp_path/store``) that the ``.torchxconfig`` of the working directory names."""
    root = str(tmp_path / "store")
    _write_torchxconfig(isolated, root)
    return root
