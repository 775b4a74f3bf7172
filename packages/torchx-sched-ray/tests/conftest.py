"""Fixtures: the live Ray cluster (from scripts/backends/services.sh or ray-up.sh) and a runner."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from torchx.testing import live_backend_env, unavailable


@dataclass(frozen=True)
class RayCluster:
    """The live cluster the tests submit to."""

    address: str


@pytest.fixture(scope="session")
def ray_cluster() -> RayCluster:
    """The cluster described by the services env file; skips (or fails under TORCHX_REQUIRE_LIVE=1) without one."""
    env = live_backend_env("TORCHX_TEST_RAY", "ray")
    address = env.get("TORCHX_TEST_RAY_ADDRESS", "http://127.0.0.1:8265")
    try:
        with urllib.request.urlopen(f"{address}/api/version", timeout=10) as r:
            r.read()
    except OSError as e:
        unavailable(f"the Ray Jobs API at {address} does not answer: {e}")
    return RayCluster(address=address)


@pytest.fixture
def runner() -> Iterator[object]:
    """A torchx Runner (session ``raytest``)."""
    from torchx.runner import get_runner

    with get_runner("raytest") as r:
        yield r


def pytest_configure(config: pytest.Config) -> None:
    """Declares the markers these tests use (also when run outside the monorepo)."""
    for marker in ("ray: needs the live Ray cluster", "torch: needs PyTorch (CPU build)", "slow: takes a while"):
        config.addinivalue_line("markers", marker)
