"""scripts/backends/lsf-up.sh against state a dead earlier run left behind (live OpenLava)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from torchx.testing import unavailable

ROOT = Path(__file__).resolve().parents[2]
WORKDIR = Path(os.environ.get("OPENLAVA_WORKDIR", "/tmp/torchx-lsf"))
PIDFILE = WORKDIR / "daemons.pid"

pytestmark = pytest.mark.lsf


def dead_pid() -> int:
    """A pid no process has now."""
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_up_with_a_stale_pid_file_keeps_the_running_cluster() -> None:
    # a pid file naming a daemon that died (machine restarted, daemon killed) must not stop `up`
    if not PIDFILE.is_file():
        unavailable(f"no OpenLava cluster started by lsf-up.sh ({PIDFILE} missing)")
    recorded = PIDFILE.read_text()
    PIDFILE.write_text(recorded + f"{dead_pid()} lim\n")
    try:
        up = subprocess.run(
            ["bash", str(ROOT / "scripts/backends/lsf-up.sh")], capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, up.stderr[-2000:]
        assert "daemons already running" in up.stderr  # found by scanning, not restarted
        assert f"{dead_pid()} lim" not in PIDFILE.read_text()
        daemons = {line.split()[1] for line in PIDFILE.read_text().splitlines()}
        assert daemons == {"lim", "pim", "res", "sbatchd", "mbatchd"}
    finally:
        if not PIDFILE.is_file() or not PIDFILE.read_text().strip():
            PIDFILE.write_text(recorded)
