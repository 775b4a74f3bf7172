"""``dist.ddp -j 2x1`` on the live Ray cluster with the CPU PyTorch wheel (markers ``ray`` and ``torch``).

The replicas run this test venv's ``torchrun`` (put first on their PATH): the test cluster runs
on this machine, so the cluster's own Python needs no torch.

The rendezvous is ``static`` (replica 0 hosts the store at ``$TORCHX_RANK0_HOST``, node ranks
from ``${replica_id}``): torchrun's default ``c10d`` decides which node hosts the store by
matching the endpoint against the node's host name, and on this VM the host name resolves
to 127.0.0.1 while Ray (which never uses loopback) reports the node as 192.0.2.2, so no
replica would host it. On clusters whose host names resolve to the node's address (e.g.
Kubernetes pods) ``c10d`` works too.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.runner import Runner

pytestmark = [pytest.mark.ray, pytest.mark.torch]

TRAIN = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} world {dist.get_world_size()} sum {t.item()} rank0 {os.environ['TORCHX_RANK0_HOST']}", flush=True)
dist.destroy_process_group()
"""


def test_ddp_2x1_all_reduces(runner: Runner, ray_cluster: Any, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("torchx_components") is None:
        pytest.skip("dist.ddp needs torchx-components installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(TRAIN)
    path = f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    args = ["-j", "2x1", "--script", "train.py", "--cpu", "1", "--memMB", "512", "--rdzv_backend", "static"]
    args += ["--rdzv_port", str(random.randint(20000, 40000)), "--env", f"PATH={path}"]
    app = runner.component_app("dist.ddp", args)
    info = runner.dryrun(app, "ray", {"address": ray_cluster.address}, workspace=str(ws))
    handle = runner.schedule(info)
    status = runner.wait(handle, wait_interval=0.5, timeout=300)
    role = app.roles[0].name
    logs = ["".join(runner.log_lines(handle, role, k)) for k in range(2)]
    assert status is not None, (status, logs)
    assert status.state == specs.AppState.SUCCEEDED, (status, logs)
    rank0 = next(r.hostname for rs in status.roles for r in rs.replicas if r.id == 0)
    found = sorted(re.findall(rf"rank (\d) world 2 sum 3\.0 rank0 {re.escape(rank0)}", "".join(logs)))
    assert found == ["0", "1"], logs
