"""The CLI imports only what the invoked verb needs: never a backend SDK it does not use."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("docker", "kubernetes", "boto3", "botocore", "fsspec", "yaml", "torch", "ray")

PROBE = """
import sys
from torchx.cli.main import run_cli
try:
    run_cli({args!r})
except SystemExit:
    pass
print("HEAVY", sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args", [["--help"], ["runopts", "local_cwd"], ["builtins"], ["plugins"], ["run", "--dryrun", "utils.echo"]]
)
def test_no_backend_sdk_imported(args: list[str]) -> None:
    for _ in range(2):  # the first run may discover plugins
        proc = subprocess.run(
            [sys.executable, "-c", PROBE.format(args=args, heavy=HEAVY)], capture_output=True, text=True, timeout=60
        )
    assert "HEAVY []" in proc.stderr, proc.stderr[-2000:]


BACKEND_PROBE = """
import sys
from torchx.cli.main import run_cli
try:
    run_cli({args!r})
except SystemExit:
    pass
print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in {packages!r}), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["run", "--dryrun", "utils.echo"]])
def test_no_unused_scheduler_package_imported(args: list[str]) -> None:
    """Not even the plugin module of an installed scheduler that is not used (the plugin cache
    answers discovery): `torchx --help` loads nothing of torchx-sched-lsf, -ray or -slurm."""
    pytest.importorskip("torchx_sched_lsf")
    packages = ("torchx_sched_lsf", "torchx_sched_ray", "torchx_sched_slurm")
    for _ in range(2):  # the first run may discover plugins
        proc = subprocess.run(
            [sys.executable, "-c", BACKEND_PROBE.format(args=args, packages=packages)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "LOADED []" in proc.stderr, proc.stderr[-2000:]
