"""Fixtures: the live Slurm cluster (from scripts/backends/services.sh) and the scheduler."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

ENV_FILE = os.path.join(os.environ.get("TORCHX_SERVICES_DIR", "/tmp/torchx-services"), "env.sh")


def read_env_file(path: str) -> dict[str, str]:
    """The ``export K=V`` lines of the services env file (``unset`` lines drop keys)."""
    env: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if len(words) >= 2 and words[0] == "export" and "=" in words[1]:
                key, _, value = words[1].partition("=")
                env[key] = value
            elif words and words[0] == "unset":
                for key in words[1:]:
                    env.pop(key, None)
    return env


@dataclass(frozen=True)
class SlurmCluster:
    """The live cluster the tests submit to."""

    partition: str
    nodes: int


def _unavailable(reason: str) -> None:
    if os.environ.get("TORCHX_REQUIRE_LIVE") == "1":
        pytest.fail(f"live Slurm required (TORCHX_REQUIRE_LIVE=1) but unavailable: {reason}")
    pytest.skip(f"no live Slurm: {reason}")


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """The cluster described by the services env file; skips (or fails under TORCHX_REQUIRE_LIVE=1) without one."""
    if not os.path.exists(ENV_FILE):
        _unavailable(f"{ENV_FILE} is missing; run `scripts/backends/services.sh up slurm`")
    env = read_env_file(ENV_FILE)
    if env.get("TORCHX_TEST_SLURM") != "1":
        _unavailable(f"{ENV_FILE} says slurm is down; run `scripts/backends/services.sh up slurm`")
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        _unavailable(f"scontrol ping failed: {e}")
    if "is UP" not in ping.stdout:
        _unavailable(f"slurmctld does not answer: {ping.stdout.strip() or ping.stderr.strip()}")
    return SlurmCluster(
        partition=env.get("TORCHX_TEST_SLURM_PARTITION", "debug"), nodes=int(env.get("TORCHX_TEST_SLURM_NODES", "1"))
    )


@pytest.fixture
def job_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh directory under /tmp for one job (the nodes share this machine's filesystem)."""
    return str(tmp_path_factory.mktemp("slurm-job"))


@pytest.fixture
def runner() -> Iterator[object]:
    """A torchx Runner (session ``slurmtest``)."""
    from torchx.runner import get_runner

    with get_runner("slurmtest") as r:
        yield r


def pytest_configure(config: pytest.Config) -> None:
    """Declares the markers these tests use (also when run outside the monorepo)."""
    for marker in ("slurm: needs the live Slurm cluster", "torch: needs PyTorch (CPU build)", "slow: takes a while"):
        config.addinivalue_line("markers", marker)
