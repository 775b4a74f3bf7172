"""Test isolation: own HOME, cwd, local_cwd and managed state."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from torchx.testing import isolate, live_backend_env, require_answer
from torchx.testing.machines import Machine


def pytest_configure(config: pytest.Config) -> None:
    """Declares the markers used here (also when run outside the monorepo's pytest config)."""
    config.addinivalue_line("markers", "torch: needs the PyTorch wheel (the ddp nox session)")


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
    """A directory under /tmp that the live backends' nodes (this machine, its containers and
    pods, which may run as other users) and every client see: a job's directory, a checkpoint
    mount, a shared journal; it holds a copy of ``counter.py``."""
    path = Path(tempfile.mkdtemp(prefix="torchx-managed-live-"))
    path.chmod(0o777)
    shutil.copy(Path(__file__).with_name("counter.py"), path / "counter.py")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def slurm() -> str:
    """The live Slurm cluster's partition."""
    env = live_backend_env("TORCHX_TEST_SLURM", "slurm")
    pytest.importorskip("torchx_sched_slurm", reason="needs torchx-sched-slurm")
    require_answer(["scontrol", "ping"], "slurmctld", lambda out, _: "is UP" in out, timeout=10)
    return env.get("TORCHX_TEST_SLURM_PARTITION", "debug")


@pytest.fixture
def lsf() -> None:
    """The live LSF (OpenLava) cluster, its client set up in this process's environment (which
    the clients the tests start, and jobs submitted from them, inherit)."""
    env = live_backend_env("TORCHX_TEST_LSF", "lsf")
    pytest.importorskip("torchx_sched_lsf", reason="needs torchx-sched-lsf")
    os.environ["LSF_ENVDIR"] = env.get("LSF_ENVDIR", os.environ.get("LSF_ENVDIR", ""))
    bindir = env.get("TORCHX_TEST_LSF_BINDIR", "")
    if bindir and bindir not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ["PATH"]
    require_answer(["lsid"], "the LSF cluster", lambda _, code: code == 0)


ListsNative = Callable[[Machine, str, str, str, Callable[[], bool]], None]


@pytest.fixture
def lists_native() -> ListsNative:
    """A check, for a target that recovers jobs inside itself: ``other`` (a machine with none of
    the submitter's state) lists the native managed job ``handle`` with ``-cfg targets=TARGET``
    and never the plain job ``plain_id``; the listed handle reads as itself; the job ends
    SUCCEEDED in one attempt with ``complete()`` true, and is listed so; with no target named,
    no target is asked."""

    def check(other: Machine, handle: str, target: str, plain_id: str, complete: Callable[[], bool]) -> None:
        def listed() -> dict[str, str]:
            proc = other.torchx("list", "-s", "managed", "-cfg", f"targets={target}", "--json")
            jobs = {a["app_handle"]: a["state"] for a in json.loads(proc.stdout)}
            assert not any(h.endswith(f":{plain_id}") for h in jobs), jobs
            return jobs

        jobs = listed()
        assert jobs.get(handle) in ("PENDING", "RUNNING", "SUCCEEDED"), jobs
        status = other.status(handle)
        assert status["app_handle"] == handle and status["state"] in ("PENDING", "RUNNING", "SUCCEEDED"), status
        status = other.ended(handle, 180)
        assert status["state"] == "SUCCEEDED" and complete(), status
        assert [(a["attempt"], a["state"]) for a in status["attempts"]] == [(0, "SUCCEEDED")], status
        assert listed()[handle] == "SUCCEEDED"
        no_target = {a["app_handle"] for a in json.loads(other.torchx("list", "-s", "managed", "--json").stdout)}
        assert handle not in no_target

    return check
