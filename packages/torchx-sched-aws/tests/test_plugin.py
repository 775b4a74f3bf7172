"""Registration, import hygiene (no boto3 unless an AWS scheduler talks to AWS) and dry-run speed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable

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


def test_dryrun_of_1x1000_batch_app_is_fast() -> None:
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
        info = runner.dryrun(app, "aws_batch", {"queue": "q"})  # warm up: plugins, runopts docs
        assert info.request.job_definition["nodeProperties"]["numNodes"] == 1000
        best = min(_timed(lambda: runner.dryrun(app, "aws_batch", {"queue": "q"})) for _ in range(10))
    assert best < 0.030, f"dryrun took {best * 1000:.1f} ms"


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
