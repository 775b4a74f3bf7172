"""The distribution registers ``ray`` without importing the scheduler (or any of its code), and nothing imports ray before the cluster is used."""

from __future__ import annotations

import subprocess
import sys

from torchx.plugins import get_registry
from torchx.schedulers import get_scheduler_factories
from torchx.specs.roles import RetryPolicy


def test_registered_through_the_torchx_entry_point_group() -> None:
    record = get_registry(refresh=True).schedulers["ray"]
    assert record.factory == "torchx_sched_ray.scheduler:create_scheduler"
    scheduler = get_scheduler_factories()["ray"]("session")
    assert scheduler.backend == "ray"
    caps = scheduler.capabilities
    assert caps.workspace
    assert caps.log_since_until
    assert caps.delete
    assert caps.retry_policies == frozenset({RetryPolicy.APPLICATION})


def _imported(code: str) -> list[str]:
    probe = (
        code
        + "\nimport sys; print(sorted(m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'torchx_sched_ray.s'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return eval(out)  # a list literal printed above


def test_discovery_imports_nothing_of_the_package() -> None:
    assert _imported("from torchx.plugins import get_registry; get_registry(refresh=True)") == []


def test_dryrun_does_not_import_ray() -> None:
    code = (
        "from torchx import specs\n"
        "from torchx_sched_ray.scheduler import create_scheduler\n"
        "app = specs.AppDef('a', [specs.Role('r', 'img', entrypoint='echo', resource=specs.Resource(1, 0, 64))])\n"
        "create_scheduler('s').submit_dryrun(app, {})\n"
    )
    assert "ray" not in _imported(code)
