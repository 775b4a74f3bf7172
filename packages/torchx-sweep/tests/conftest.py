"""Test isolation (own HOME, cwd, local and sweep state) and the live backends the sweep tests use."""

from __future__ import annotations

import os
import shutil
import urllib.request
from pathlib import Path

import pytest
from torchx.testing import isolate, live_backend_env, require_answer, unavailable
from torchx.testing.procs import use_procs

COMPONENTS = str(Path(__file__).with_name("sweep_components.py"))


def pytest_configure(config: pytest.Config) -> None:
    """Declares the backend markers (also when run outside the monorepo's pytest config)."""
    for marker in ("slurm: live Slurm", "aws: the moto endpoint", "k8s: live Kubernetes", "lsf: live LSF (OpenLava)"):
        config.addinivalue_line("markers", marker)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs each test in ``tmp_path/work`` with its own HOME and sweep state; yields the cwd."""
    work = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("TORCHX_SWEEP_STATE_DIR", str(tmp_path / "sweeps"))
    for name in list(os.environ):
        if name.startswith(("TORCHX_TRACKER", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID")):
            monkeypatch.delenv(name)
    return work


@pytest.fixture
def components() -> str:
    """Path of the test components file (``argv``, ``typed``)."""
    return COMPONENTS


@pytest.fixture
def sched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The scheduler the non-live sweeps run on: core's test scheduler (real processes, see
    :mod:`torchx.testing.procs`), so these tests need no scheduler distribution."""
    return use_procs(tmp_path, monkeypatch)


@pytest.fixture
def slurm_cfg(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Run options for the live Slurm cluster (a fresh job directory on the shared filesystem)."""
    env = live_backend_env("TORCHX_TEST_SLURM", "slurm")
    require_answer(["scontrol", "ping"], "slurmctld", lambda out, _: "is UP" in out, timeout=10)
    job_dir = str(tmp_path_factory.mktemp("slurm-sweep", numbered=True))
    return {"partition": env.get("TORCHX_TEST_SLURM_PARTITION", "debug"), "job_dir": job_dir}


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The moto endpoint's settings, exported to this process (and so to a sweep's driver)."""
    env = live_backend_env("TORCHX_TEST_AWS", "moto")
    url = env.get("AWS_ENDPOINT_URL", "")
    try:
        with urllib.request.urlopen(url + "/moto-api/config", timeout=5):
            pass
    except (OSError, ValueError) as e:
        unavailable(f"moto does not answer at {url!r}: {e}")
    if env.get("TORCHX_TEST_AWS_BATCH_DOCKER") != "1":
        unavailable("moto runs Batch without Docker (no logs): start docker before moto")
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return env


@pytest.fixture
def lsf_cfg(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Run options for the live LSF (OpenLava) cluster, its client put on this process's PATH."""
    env = live_backend_env("TORCHX_TEST_LSF", "lsf")
    monkeypatch.setenv("LSF_ENVDIR", env.get("LSF_ENVDIR", os.environ.get("LSF_ENVDIR", "")))
    bindir = env.get("TORCHX_TEST_LSF_BINDIR", "")
    if bindir:
        monkeypatch.setenv("PATH", bindir + os.pathsep + os.environ["PATH"])
    require_answer(["lsid"], "the LSF cluster", lambda _, code: code == 0)
    return {"job_dir": str(tmp_path_factory.mktemp("lsf-sweep", numbered=True))}


@pytest.fixture
def bsub_log(lsf_cfg: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file with one line per ``bsub`` run from now on: a ``bsub`` first on PATH that notes the
    call and execs LSF's own."""
    real = shutil.which("bsub")
    if real is None:
        unavailable("no bsub on PATH")
    shim = tmp_path / "bsub-shim"
    shim.mkdir()
    log = tmp_path / "bsub.calls"
    log.touch()
    (shim / "bsub").write_text(f'#!/bin/sh\necho "$*" >>"{log}"\nexec "{real}" "$@"\n')
    (shim / "bsub").chmod(0o755)
    monkeypatch.setenv("PATH", str(shim) + os.pathsep + os.environ["PATH"])
    return log
