"""``torchx.testing.machines.Machine.gone``: a client that left a process behind is caught, while
the processes a cluster's daemon started with the client's environment (Slurm and LSF export
HOME with the rest) are the cluster's. Real processes: a copy of ``sh`` named like a daemon."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.testing import eventually
from torchx.testing.machines import Machine, processes_with_home


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _start(procs: list[subprocess.Popen[bytes]], machine: Machine, shell: str) -> None:
    env = {**os.environ, "HOME": str(machine.home)}
    procs.append(subprocess.Popen([shell, "-c", "sleep 60 & wait"], env=env, start_new_session=True))
    eventually(lambda: len(processes_with_home(machine.home)) >= 2)  # the shell and its sleep


def test_a_process_the_client_left_is_caught(tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    machine = Machine(tmp_path, "client")
    _start(procs, machine, "/bin/sh")
    with pytest.raises(AssertionError, match="processes of the torn-down client still run"):
        machine.gone()


def test_processes_a_cluster_daemon_started_are_the_clusters(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    machine = Machine(tmp_path, "client")
    daemon = tmp_path / "slurmstepd"  # its comm is the file's name, as the real daemon's
    shutil.copy("/bin/sh", daemon)
    _start(procs, machine, str(daemon))
    machine.gone()
    assert not machine.home.exists()
