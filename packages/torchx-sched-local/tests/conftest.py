"""Fixtures: an isolated HOME/state directory per test, real local jobs, and no stray processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import isolate, live_backend_env, unavailable
from torchx_sched_local.local_scheduler import LocalScheduler


def pytest_configure(config: pytest.Config) -> None:
    """Declares this package's markers when run outside the monorepo's pytest config."""
    config.addinivalue_line("markers", "docker: needs a live Docker engine (scripts/backends/services.sh up docker)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Own HOME, cwd, caches and local state directory; fails the test if a job left processes behind."""
    yield isolate(tmp_path, monkeypatch)
    leftovers = stray_processes(tmp_path)
    for pid in leftovers:
        try:
            os.killpg(pid, 9)
        except OSError:
            pass
    assert not leftovers, f"processes left behind by local jobs: {leftovers}"


def stray_processes(root: Path) -> list[int]:
    """Live replica processes (or their descendants) of the test's jobs, after cancelling every job.

    A replica is recognised by its environment: its error file lies under ``root``.
    """
    sched = LocalScheduler("test", state_dir=str(root / "state"))
    for resp in sched.list():
        sched.cancel(resp.app_id)
    needle = f"TORCHELASTIC_ERROR_FILE={root}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        zombie = stat[stat.rindex(b")") + 2 :].startswith(b"Z")
        if needle in environ and not zombie:
            found.append(int(entry))
    return found


@pytest.fixture
def sched(tmp_path: Path) -> Iterator[LocalScheduler]:
    """A ``local_cwd`` scheduler on the test's state directory."""
    s = LocalScheduler("test", state_dir=str(tmp_path / "state"))
    yield s
    s.close()


@pytest.fixture(scope="session")
def docker_live() -> dict[str, str]:
    """The live Docker engine of ``scripts/backends/services.sh up docker``: its env (images)."""
    env = live_backend_env("TORCHX_TEST_DOCKER", "docker")
    try:
        import docker
    except ModuleNotFoundError:
        unavailable("the docker SDK is not installed: pip install 'torchx-sched-local[docker]'")
    if env.get("DOCKER_HOST"):
        os.environ.setdefault("DOCKER_HOST", env["DOCKER_HOST"])
    try:
        client = docker.from_env()
        client.ping()
        for key in ("TORCHX_TEST_DOCKER_IMAGE", "TORCHX_TEST_BUSYBOX_IMAGE"):
            client.images.get(env[key])
        client.close()
    except Exception as e:
        unavailable(f"the Docker engine is not usable: {type(e).__name__}: {e}")
    return env


@pytest.fixture
def client(docker_live: dict[str, str]) -> Any:
    """A docker SDK client for checking what the scheduler did."""
    import docker

    c = docker.from_env()
    yield c
    c.close()


@pytest.fixture
def docker_sched(docker_live: dict[str, str]) -> Iterator[Any]:
    """A ``local_docker`` scheduler; every app it submitted is deleted afterwards."""
    from torchx_sched_local.docker_scheduler import DockerScheduler

    class Tracked(DockerScheduler):
        submitted: list[str] = []

        def schedule(self, dryrun_info: Any) -> str:
            app_id = super().schedule(dryrun_info)
            self.submitted.append(app_id)
            return app_id

    sched = Tracked("test")
    sched.submitted = []
    yield sched
    for app_id in sched.submitted:
        sched.delete(app_id)
    sched.close()
