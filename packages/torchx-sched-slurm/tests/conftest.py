"""Fixtures: the live Slurm cluster (from scripts/backends/services.sh) and the scheduler."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from torchx.testing import live_backend_env, require_answer


@dataclass(frozen=True)
class SlurmCluster:
    """The live cluster the tests submit to."""

    partition: str
    nodes: int


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """The cluster described by the services env file; skips (or fails under TORCHX_REQUIRE_LIVE=1) without one."""
    env = live_backend_env("TORCHX_TEST_SLURM", "slurm")
    require_answer(["scontrol", "ping"], "slurmctld", lambda out, _: "is UP" in out, timeout=10)
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
