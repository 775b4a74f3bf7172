"""The distribution registers ``lsf`` through its metadata: discovering it imports none of its code."""

from __future__ import annotations

import subprocess
import sys

from torchx.plugins import get_registry
from torchx.schedulers import get_scheduler_factories


def test_registered_through_the_torchx_entry_point_group() -> None:
    record = get_registry(refresh=True).schedulers["lsf"]
    assert record.factory == "torchx_sched_lsf.scheduler:create_scheduler"
    scheduler = get_scheduler_factories()["lsf"]("session")
    assert scheduler.backend == "lsf"
    caps = scheduler.capabilities
    assert caps.workspace and caps.delete and not caps.log_since_until
    assert caps.log_streams == {"stdout", "stderr", "combined"}


def test_discovery_imports_nothing_of_the_package() -> None:
    code = "import sys; from torchx.plugins import get_registry; get_registry(refresh=True); print(sorted(m for m in sys.modules if m.startswith('torchx_sched_lsf')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
