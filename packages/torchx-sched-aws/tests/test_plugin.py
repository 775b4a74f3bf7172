"""Registration, import hygiene (no boto3 unless an AWS scheduler talks to AWS) and a 1000-replica dry run (its speed: benchmarks/run.py scenario 12)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from torchx import specs
from torchx.plugins import get_registry
from torchx.runner import get_runner

PROBE = """
import sys
from torchx.cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
heavy = sorted(m for m in ("boto3", "botocore", "s3transfer") if m in sys.modules)
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
"""


def test_registers_both_schedulers() -> None:
    schedulers = get_registry(refresh=True).schedulers
    assert schedulers["aws_batch"].factory == "torchx_sched_aws.batch:create_scheduler"
    assert schedulers["aws_sagemaker"].factory == "torchx_sched_aws.sagemaker:create_scheduler"


@pytest.mark.parametrize(
    "argv", [["--help"], ["runopts", "local_cwd"], ["runopts", "aws_batch"], ["runopts", "aws_sagemaker"]]
)
def test_cli_never_imports_boto3(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, timeout=60)
    assert "HEAVY:\n" in proc.stderr, proc.stderr
    if argv[0] == "runopts" and argv[1].startswith("aws"):
        assert "queue" in proc.stdout or "role" in proc.stdout


def test_dryrun_of_1x1000_batch_app_is_one_multinode_definition() -> None:
    # its speed (<= 30 ms) is measured by benchmarks/run.py scenario 12, not timed here
    roles = [
        specs.Role(
            "trainer",
            image="img",
            entrypoint="python",
            args=["-m", "train", f"--rank={specs.macros.replica_id}"],
            num_replicas=1000,
            resource=specs.resource(h="aws_p4d.24xlarge"),
        )
    ]
    app = specs.AppDef("big", roles=roles)
    with get_runner() as runner:
        info = runner.dryrun(app, "aws_batch", {"queue": "q"})
    assert info.request.job_definition["nodeProperties"]["numNodes"] == 1000
