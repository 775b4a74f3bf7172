"""dist.ddp runs for real with the CPU build of PyTorch on local_cwd: ranks, world size, gloo all-reduce.

Marked ``torch``: skipped when torch is not installed, unless TORCHX_REQUIRE_LIVE=1 (then it fails).
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner import Runner, get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.torch

ALLREDUCE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
print(f"RANK={os.environ['RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']} SUM={value.item():g} ARG={os.sys.argv[1:]}",
      flush=True)
dist.destroy_process_group()
"""
LINE = re.compile(r"RANK=(\d+) WORLD_SIZE=(\d+) SUM=(\S+) ARG=(.*)$")


@pytest.fixture(autouse=True)
def require_torch() -> None:
    """torch and local_cwd (the nox session ``ddp`` installs both): a live test's backend."""
    for module, message in (
        ("torch", "torch is not installed (pip install torch==2.13.0)"),
        ("torchx_sched_local", "the local_cwd scheduler is not installed (pip install torchx-sched-local)"),
    ):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("TORCHX_REQUIRE_LIVE") == "1":
                pytest.fail(f"{message} and TORCHX_REQUIRE_LIVE=1")
            pytest.skip(message)


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("components-torch") as r:
        yield r


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ddp(runner: Runner, workdir: Path, j: str) -> dict[int, tuple[int, float, str]]:
    """Runs the all-reduce script with ``dist.ddp -j J``; returns rank -> (world size, sum, args) from the logs."""
    (workdir / "allreduce.py").write_text(ALLREDUCE)
    handle = runner.run_component(
        "dist.ddp",
        ["-j", j, "--rdzv_port", str(free_port()), "--script", "allreduce.py", "--", "--tag", "a b"],
        scheduler="local_cwd",
    )
    status = runner.wait(handle, wait_interval=0.5, timeout=300)
    app = runner.describe(handle)
    assert app is not None
    role = app.roles[0]
    logs = ["".join(runner.log_lines(handle, role.name, k)) for k in range(role.num_replicas)]
    assert status is not None, "\n".join(logs)
    assert status.state == AppState.SUCCEEDED, "\n".join(logs)
    ranks: dict[int, tuple[int, float, str]] = {}
    for log in logs:
        for line in log.splitlines():
            match = LINE.search(line)
            if match:
                ranks[int(match[1])] = (int(match[2]), float(match[3]), match[4])
    return ranks


def expected(world: int) -> dict[int, tuple[int, float, str]]:
    total = float(sum(range(1, world + 1)))
    return {rank: (world, total, "['--tag', 'a b']") for rank in range(world)}


def test_ddp_single_node(runner: Runner, isolated: Path) -> None:
    assert run_ddp(runner, isolated, "1x2") == expected(2)


def test_ddp_two_local_nodes(runner: Runner, isolated: Path) -> None:
    assert run_ddp(runner, isolated, "2x2") == expected(4)
