"""TorchX's Quickstart guide (docs/source/quickstart.md of TorchX 0.7), its commands and files
unchanged, in a fresh directory.

Run for real: the ``local_cwd`` steps. The ``local_docker`` steps need the TorchX image from
ghcr.io (not reachable here): their ``--help`` runs, the runs do not. The remote-scheduler
step runs as a dry run on ``slurm``, which shows ``.torchxconfig``'s ``[slurm]`` section applied.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")

MY_APP = """\
import sys

print(f"Hello, {sys.argv[1]}!")
"""

DIST_APP = """\
import torch
import torch.distributed as dist

dist.init_process_group(backend="gloo")
print(f"I am worker {dist.get_rank()} of {dist.get_world_size()}!")

a = torch.tensor([dist.get_rank()])
dist.all_reduce(a)
print(f"all_reduce output = {a}")
"""

TORCHXCONFIG = """\
[kubernetes]
queue=torchx
image_repo=<your docker image repository>

[slurm]
partition=torchx
"""


def test_quickstart(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    assert run_torchx("--help").returncode == 0

    # Hello World / Launching
    write(isolated / "my_app.py", MY_APP)
    help_text = run_torchx("run", "--scheduler", "local_cwd", "utils.python", "--help")
    assert help_text.returncode == 0
    assert "--script" in help_text.stdout
    proc = run_torchx("run", "--scheduler", "local_cwd", "utils.python", "--script", "my_app.py", "your name")
    assert proc.returncode == 0, proc.stderr
    assert "Hello, your name!" in proc.stdout

    # Distributed
    assert run_torchx("run", "--scheduler", "local_docker", "dist.ddp", "--help").returncode == 0
    write(isolated / "dist_app.py", DIST_APP)

    # .torchxconfig
    write(isolated / ".torchxconfig", TORCHXCONFIG)
    again = run_torchx("run", "--scheduler", "local_cwd", "utils.python", "--script", "my_app.py", "your name")
    assert again.returncode == 0, again.stderr
    assert "Hello, your name!" in again.stdout, again.stderr

    # Remote Schedulers (as a dry run) and "All config options"
    assert run_torchx("runopts").returncode == 0
    pytest.importorskip("torchx_sched_slurm")
    slurm = run_torchx("run", "--dryrun", "--scheduler", "slurm", "dist.ddp", "-j", "2x2", "--script", "dist_app.py")
    assert slurm.returncode == 0, slurm.stderr
    assert "--partition=torchx" in slurm.stdout
    assert "dist_app.py" in slurm.stdout
