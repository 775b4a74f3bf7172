"""``torchx.schedulers.slurm_scheduler`` request records as TorchX 0.7 documents them."""

from __future__ import annotations

import pytest
from torchx import specs

pytest.importorskip("torchx_sched_slurm")

from torchx.schedulers.slurm_scheduler import SlurmBatchRequest, SlurmReplicaRequest, create_scheduler


def role() -> specs.Role:
    return specs.Role(
        "trainer", image="/tmp", entrypoint="python", args=["train.py", "--lr", "0.1"], env={"A": "1"},
        resource=specs.Resource(cpu=4, gpu=2, memMB=8192), max_retries=2,
    )  # fmt: skip


def test_replica_request_from_role_and_materialize() -> None:
    req = SlurmReplicaRequest.from_role("trainer-0", role(), {"partition": "debug", "time": "1:00:00"}, nomem=False)
    sbatch, srun = req.materialize()
    assert sbatch[0] == "--job-name=trainer-0"
    assert "--partition=debug" in sbatch and "--time=1:00:00" in sbatch
    assert "--cpus-per-task=4" in sbatch
    assert any(a.startswith("--mem=") for a in sbatch)
    assert "--requeue" in sbatch
    assert srun[-4:] == ["python", "train.py", "--lr", "0.1"]
    assert "--export=ALL,A=1" in srun
    assert any(a.startswith("--output=") for a in srun) and any(a.startswith("--error=") for a in srun)
    sbatch, _ = SlurmReplicaRequest.from_role("trainer-0", role(), {}, nomem=True).materialize()
    assert not any(a.startswith("--mem") for a in sbatch)


def test_batch_request_materialize_is_the_sbatch_script() -> None:
    app = specs.AppDef("a", roles=[role()])
    req = create_scheduler("compat").submit_dryrun(app, {"partition": "debug"}).request
    assert isinstance(req, SlurmBatchRequest)
    script = req.materialize()
    assert script.startswith("#!/bin/bash")
    assert "#SBATCH --job-name=trainer-0" in script
    assert "#SBATCH --partition=debug" in script
    assert "srun" in script
