"""Test isolation, and the live AWS endpoint (moto) of ``scripts/backends/services.sh``.

Live tests (marker ``aws``) take the endpoint from the environment when
``TORCHX_TEST_AWS=1`` is set there, else from the services env file
(``$TORCHX_SERVICES_ENV``, default ``/tmp/torchx-services/env.sh``). Without it they skip,
or fail when ``TORCHX_REQUIRE_LIVE=1``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import isolate, live_backend_env, unavailable

REPO = Path(__file__).resolve().parents[3]
MOTO_LAUNCHER = REPO / "scripts" / "backends" / "moto_launcher.py"
DEFAULT_MOTO_PYTHON = "/var/cache/torchx-moto/venv/bin/python"


def pytest_configure(config: pytest.Config) -> None:
    """Declares the ``aws`` marker when run outside the monorepo's pytest config."""
    config.addinivalue_line("markers", "aws: needs the moto AWS endpoint (scripts/backends/services.sh up moto)")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Own HOME, cwd and plugin cache per test (no .torchxconfig leaks in)."""
    return isolate(tmp_path, monkeypatch)


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def aws_live() -> Iterator[dict[str, str]]:
    """The moto endpoint's settings; the process environment points boto3 at it meanwhile."""
    env = live_backend_env("TORCHX_TEST_AWS", "moto")
    if not env.get("AWS_ENDPOINT_URL"):
        unavailable("the services env sets no AWS_ENDPOINT_URL: run scripts/backends/services.sh up moto")
    if not _reachable(env["AWS_ENDPOINT_URL"] + "/moto-api/config"):
        unavailable(f"moto does not answer at {env['AWS_ENDPOINT_URL']}: run scripts/backends/services.sh up moto")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            if name.startswith(("AWS_", "TORCHX_TEST_AWS")):
                mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        yield env


@pytest.fixture(scope="session")
def batch_queue(aws_live: dict[str, str]) -> str:
    """The seeded Batch job queue."""
    return aws_live.get("TORCHX_TEST_AWS_BATCH_QUEUE") or "torchx"


@pytest.fixture(scope="session")
def batch_docker(aws_live: dict[str, str], batch_queue: str) -> str:
    """The queue, when moto runs Batch jobs as real containers (needed for logs, RUNNING, FAILED)."""
    if aws_live.get("TORCHX_TEST_AWS_BATCH_DOCKER") != "1":
        unavailable("moto runs Batch without Docker (jobs succeed at once, no logs): start docker before moto")
    return batch_queue


@pytest.fixture(scope="session")
def busybox_image(aws_live: dict[str, str]) -> str:
    """A local image with /bin/sh and echo."""
    return os.environ.get("TORCHX_TEST_BUSYBOX_IMAGE") or "localhost/torchx-busybox:latest"


@pytest.fixture(scope="session")
def python_image(aws_live: dict[str, str]) -> str:
    """A local image with python3."""
    return aws_live.get("TORCHX_TEST_AWS_IMAGE") or "localhost/torchx-python:bookworm"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def sagemaker_lifecycle(
    aws_live: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], Any]]:
    """``final_status -> sagemaker client`` of a private moto server whose training jobs stay
    InProgress for a few seconds, then end in ``final_status`` (moto_launcher's
    MOTO_SM_TRAINING_SECONDS / MOTO_SM_FINAL_STATUS). Servers start on first use, stop at the end."""
    python = os.environ.get("TORCHX_TEST_MOTO_PYTHON") or aws_live.get("TORCHX_TEST_MOTO_PYTHON") or DEFAULT_MOTO_PYTHON
    if not Path(python).exists() or not MOTO_LAUNCHER.exists():
        unavailable(f"need moto's python ({python}; set TORCHX_TEST_MOTO_PYTHON) and {MOTO_LAUNCHER}")
    procs: list[subprocess.Popen[bytes]] = []
    clients: dict[str, Any] = {}
    logdir = tmp_path_factory.mktemp("moto-lifecycle")

    def client(final_status: str) -> Any:
        if final_status not in clients:
            import boto3

            port = _free_port()
            env = {
                **os.environ,
                "MOTO_SM_TRAINING_SECONDS": str(TRAINING_SECONDS),
                "MOTO_SM_FINAL_STATUS": final_status,
            }
            env.pop("AWS_ENDPOINT_URL", None)
            with open(logdir / f"{final_status}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [python, str(MOTO_LAUNCHER), "-H", "127.0.0.1", "-p", str(port)],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                    )
                )
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while not _reachable(url + "/moto-api/config"):
                if procs[-1].poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"private moto server did not start: {(logdir / f'{final_status}.log').read_text()[-2000:]}"
                    )
                time.sleep(0.2)
            clients[final_status] = boto3.client("sagemaker", endpoint_url=url)
        return clients[final_status]

    yield client
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


#: how long jobs of the private lifecycle servers stay InProgress
TRAINING_SECONDS = 4
