"""DDP across two Slurm nodes with the CPU PyTorch wheel (markers ``slurm`` and ``torch``)."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import sys
from typing import Any

import pytest
from torchx import specs
from torchx.runner import Runner
from torchx.schedulers.streams import Stream

pytestmark = [pytest.mark.slurm, pytest.mark.torch]

TRAIN = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} world {dist.get_world_size()} sum {t.item()}", flush=True)
dist.destroy_process_group()
"""


def ddp_app(runner: Runner, port: int) -> specs.AppDef:
    """``dist.ddp -j 2x1 --script train.py`` (torchx-components) with this interpreter's torchrun on PATH."""
    path = f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    args = [
        "-j",
        "2x1",
        "--script",
        "train.py",
        "--cpu",
        "1",
        "--memMB",
        "1024",
        "--rdzv_port",
        str(port),
        "--env",
        f"PATH={path}",
    ]
    return runner.component_app("dist.ddp", args)


def test_ddp_2x1_all_reduce(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("torchx_components") is None:
        pytest.skip("dist.ddp needs torchx-components installed")
    if slurm_cluster.nodes < 2:
        pytest.skip("needs 2 nodes")
    with open(os.path.join(job_dir, "train.py"), "w") as f:
        f.write(TRAIN)
    app = ddp_app(runner, random.randint(20000, 40000))
    handle = runner.run(app, "slurm", {"partition": slurm_cluster.partition, "job_dir": job_dir})
    status = runner.wait(handle, wait_interval=0.5, timeout=240)
    role = app.roles[0].name
    logs = [
        "".join(runner.log_lines(handle, role, k, streams=s)) for k in range(2) for s in (Stream.STDOUT, Stream.STDERR)
    ]
    assert status is not None, (status, logs)
    assert status.state == specs.AppState.SUCCEEDED, (status, logs)
    found = sorted(re.findall(r"rank (\d) world 2 sum 3\.0", "".join(logs[0::2])))
    assert found == ["0", "1"], logs
    hosts = {r.hostname for rs in status.roles for r in rs.replicas}
    assert len(hosts) == 2
