"""``torchx list -s managed -cfg targets=T``: the jobs that recover inside target ``T`` are
listed with their managed handles (``managed://SESSION/T:ID``), beside the driver's jobs, and
nothing else of ``T``: not its plain jobs, not the attempts a driver submitted. Without
``targets`` no target is asked. Real jobs on local_cwd, and on the live Slurm and LSF clusters
read from another client (a fresh HOME: none of the submitter's state).

Needs torchx-sched-local; the cluster tests run in ``nox -s integration-managed``."""

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


def test_native_local_cwd_jobs_are_listed_when_asked() -> None:
    pytest.importorskip("torchx_sched_local", reason="needs torchx-sched-local (the local_cwd scheduler)")
    pytest.importorskip("torchx_components", reason="needs torchx-components (utils.sh)")
    native = run_cli("run", "-s", "managed", "-cfg", "targets=local_cwd", "--wait", "utils.sh", "--", "true")
    assert native.returncode == 0, native.stderr
    native_handle = _handle(native)
    assert native_handle.startswith("managed://torchx/local_cwd:"), native.stdout
    plain = run_cli("run", "-s", "local_cwd", "--wait", "utils.sh", "--", "true")
    assert plain.returncode == 0, plain.stderr
    plain_id = _handle(plain).rsplit("/", 1)[1]
    driven = run_cli("run", "-s", "managed", "-cfg", "targets=local_cwd,controller=local", "--wait", "utils.sh", "--", "true")  # fmt: skip
    assert driven.returncode == 0, driven.stderr
    driven_handle = _handle(driven)

    assert _listed() == {driven_handle: "SUCCEEDED"}  # no target asked
    listed = _listed("targets=local_cwd")
    assert listed == {driven_handle: "SUCCEEDED", native_handle: "SUCCEEDED"}, listed
    assert not any(plain_id in h for h in listed)  # neither the plain job nor the driver's attempt
    status = run_cli("status", "--json", native_handle)
    assert json.loads(status.stdout)["state"] == "SUCCEEDED", status.stderr

    for target, why in (("ray", "records do not say"), ("nope", "not an installed scheduler")):
        bad = run_cli("list", "-s", "managed", "-cfg", f"targets={target}")
        assert bad.returncode != 0 and why in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


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
