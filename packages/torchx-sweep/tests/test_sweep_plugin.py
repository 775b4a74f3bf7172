"""The distribution registers ``torchx sweep`` through its metadata: discovering it imports none of its code."""

from __future__ import annotations

import subprocess
import sys

from torchx.plugins import get_registry


def test_sweep_command_is_registered() -> None:
    record = get_registry().cli_commands["sweep"]
    assert record.factory == "torchx_sweep.cli:CmdSweep"


def test_discovery_imports_nothing_of_the_command() -> None:
    code = (
        "import sys; from torchx.plugins import get_registry; get_registry(refresh=True)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('torchx_sweep'))\n"
        "print(loaded, 'torchx.runner' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] False"


def test_help_lists_the_verbs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchx.cli.main", "sweep", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    for word in ("--param", "--random", "--trials", "--max-parallel", "--fail-fast", "--dryrun", "status,wait"):
        assert word in proc.stdout
