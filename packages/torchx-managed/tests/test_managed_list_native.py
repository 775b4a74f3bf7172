"""``torchx list -s managed -cfg targets=T``: the jobs that recover inside target ``T`` are
listed with their managed handles (``managed://SESSION/T:ID``), beside the driver's jobs, and
nothing else of ``T``: not its plain jobs, not the attempts a driver submitted. Without
``targets`` no target is asked. Real jobs on the live Slurm and LSF clusters read from another
client (a fresh HOME: none of the submitter's state); they run in ``nox -s
integration-managed``. The same on local_cwd is in the root tests/ tree
(``tests/managed/test_managed_list_native_local.py``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import run_cli
from torchx.testing.machines import Machine

COUNTER = Path(__file__).with_name("counter.py")


def _listed(*cfg: str, run: Callable[..., Any] = run_cli) -> dict[str, str]:
    args = ["list", "-s", "managed", *(["-cfg", ",".join(cfg)] if cfg else []), "--json"]
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    return {a["app_handle"]: a["state"] for a in json.loads(proc.stdout)}


def _handle(proc: Any) -> str:
    """The handle ``torchx run`` printed (with ``--wait``, the line before its final state)."""
    out = str(proc.stdout).strip().splitlines()
    assert out, proc
    return out[-1].split()[-2] if out[-1].startswith("torchx:") else out[-1]


def _listed_from_another_machine(tmp_path: Path, shared: Path, target: str, cfg: str) -> None:
    """A job recovering in ``target`` and a plain job there, submitted by one client that is
    then gone; another client lists the first (at once: pending or running) and not the second."""
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    shutil.copy(COUNTER, shared / "counter.py")
    counter = ["utils.sh", "python3", str(shared / "counter.py"), "3", "0.2"]
    run = submitter.torchx("run", "-s", "managed", "-cfg", f"targets={target},{cfg}", *counter)
    handle = _handle(run)
    assert handle.startswith(f"managed://torchx/{target}:"), run.stdout
    plain_id = _handle(submitter.torchx("run", "-s", target, "-cfg", cfg, "utils.sh", "true")).rsplit("/", 1)[1]
    submitter.gone()

    listed = _listed(f"targets={target}", run=other.torchx)  # its attempt log is made at submit
    assert handle in listed and listed[handle] in ("PENDING", "RUNNING", "SUCCEEDED"), listed
    assert not any(h.endswith(f":{plain_id}") for h in listed), listed
    assert other.ended(handle, 120)["state"] == "SUCCEEDED"
    assert _listed(f"targets={target}", run=other.torchx)[handle] == "SUCCEEDED"
    assert handle not in _listed(run=other.torchx)  # no target asked


@pytest.mark.slurm
def test_native_slurm_jobs_are_listed_from_another_machine(tmp_path: Path, slurm: str, shared: Path) -> None:
    _listed_from_another_machine(tmp_path, shared, "slurm", f"partition={slurm},job_dir={shared}")


@pytest.mark.lsf
def test_native_lsf_jobs_are_listed_from_another_machine(tmp_path: Path, lsf: None, shared: Path) -> None:
    _listed_from_another_machine(tmp_path, shared, "lsf", f"job_dir={shared}")
