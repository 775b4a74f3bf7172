"""Fixtures: the live OpenLava/LSF cluster (from scripts/backends/services.sh) and the scheduler."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from torchx.testing import live_backend_env, require_answer

#: words that break naive quoting (each must reach the process unchanged): the ``hostile`` fixture
HOSTILE = [
    ":",
    "$(touch /tmp/torchx-pwned-lsf)",
    "`id`",
    "a; echo injected",
    'it\'s "quoted"',
    "two\nlines",
    "ünïcödé €𝄞",
    "back\\slash",
    "--",
    "%J %I",
    "*",
    "",
]


@pytest.fixture
def hostile() -> list[str]:
    """Words that break naive quoting (``:``, ``$(...)``, quotes, a newline, ``%J`` ...): each
    must reach the process unchanged."""
    return list(HOSTILE)


@pytest.fixture(scope="session")
def lsf_cluster() -> dict[str, str]:
    """The cluster's env (PATH, LSF_ENVDIR ...) from the services env file, applied to this process;
    skips (or fails under TORCHX_REQUIRE_LIVE=1) without a cluster."""
    env = live_backend_env("TORCHX_TEST_LSF", "lsf")
    # the scheduler runs bsub/bjobs from PATH and they find the cluster through LSF_ENVDIR
    os.environ["LSF_ENVDIR"] = env.get("LSF_ENVDIR", os.environ.get("LSF_ENVDIR", ""))
    bindir = env.get("TORCHX_TEST_LSF_BINDIR", "")
    if bindir and bindir not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ["PATH"]
    require_answer(["lsid"], "the LSF cluster", lambda _, code: code == 0)
    return env


@pytest.fixture
def job_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh directory under /tmp for one job (the execution host shares this machine's filesystem)."""
    return str(tmp_path_factory.mktemp("lsf-job"))


@pytest.fixture
def runner() -> Iterator[object]:
    """A torchx Runner (session ``lsftest``)."""
    from torchx.runner import get_runner

    with get_runner("lsftest") as r:
        yield r


def pytest_configure(config: pytest.Config) -> None:
    """Declares the markers these tests use (also when run outside the monorepo)."""
    for marker in ("lsf: needs the live LSF (OpenLava) cluster", "slow: takes a while"):
        config.addinivalue_line("markers", marker)
