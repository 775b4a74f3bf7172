"""The distribution registers ``slurm`` through its metadata: discovering it imports none of its code."""

from __future__ import annotations

import subprocess
import sys

from torchx.plugins import get_registry
from torchx.schedulers import get_scheduler_factories


def test_registered_through_the_torchx_plugins_entry_points() -> None:
    record = get_registry(refresh=True).schedulers["slurm"]
    assert record.factory == "torchx_sched_slurm.scheduler:create_scheduler"
    scheduler = get_scheduler_factories()["slurm"]("session")
    assert scheduler.backend == "slurm"
    assert scheduler.capabilities.workspace
    assert not scheduler.capabilities.log_since_until


def test_discovery_imports_nothing_of_the_package() -> None:
    code = "import sys; from torchx.plugins import get_registry; get_registry(refresh=True); print(any(m.startswith('torchx_sched_slurm') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
