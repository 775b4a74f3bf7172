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
    """The options TorchX 0.7 gives a replica, in its order: requeue, the group options of cfg,
    one task per node, then cpus/mem (MB, no unit)/gpus per task; srun's log files, wait and
    kill-on-bad-exit; every srun word shell-quoted."""
    req = SlurmReplicaRequest.from_role(
        "trainer-0", role(), {"partition": "debug", "time": "1:00:00", "comment": "job-level"}, nomem=False
    )
    sbatch, srun = req.materialize()
    assert sbatch == [
        "--job-name=trainer-0",
        "--requeue",
        "--partition=debug",
        "--time=1:00:00",
        "--ntasks-per-node=1",
        "--cpus-per-task=4",
        "--mem=8192",
        "--gpus-per-task=2",
    ]
    assert srun == [
        '--output=slurm-"$SLURM_JOB_ID"-trainer-0.out',
        '--error=slurm-"$SLURM_JOB_ID"-trainer-0.err',
        "--wait=60",
        "--kill-on-bad-exit=1",
        "--export=ALL,A=1",
        "python",
        "train.py",
        "--lr",
        "0.1",
    ]
    sbatch, _ = SlurmReplicaRequest.from_role("trainer-0", role(), {}, nomem=True).materialize()
    assert sbatch == [
        "--job-name=trainer-0",
        "--requeue",
        "--ntasks-per-node=1",
        "--cpus-per-task=4",
        "--gpus-per-task=2",
    ]


def test_replica_request_of_a_role_without_resource_and_with_the_app_id_macro() -> None:
    bare = specs.Role("r", image="/tmp", entrypoint="echo", args=[f"run {specs.macros.app_id}", "it's"])
    sbatch, srun = SlurmReplicaRequest.from_role("r-0", bare, {}, nomem=False).materialize()
    assert sbatch == ["--job-name=r-0", "--requeue", "--ntasks-per-node=1"]
    assert srun[-3:] == ["echo", "'run '\"$SLURM_JOB_ID\"''", "'it'\"'\"'s'"]


def test_batch_request_materialize_is_the_sbatch_script() -> None:
    app = specs.AppDef("a", roles=[role()])
    req = create_scheduler("compat").submit_dryrun(app, {"partition": "debug"}).request
    assert isinstance(req, SlurmBatchRequest)
    script = req.materialize()
    assert script.startswith("#!/bin/bash")
    assert "#SBATCH --job-name=trainer-0" in script
    assert "#SBATCH --partition=debug" in script
    assert "srun" in script
