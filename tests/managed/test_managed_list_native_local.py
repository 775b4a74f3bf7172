"""``torchx list -s managed -cfg targets=local_cwd``: the jobs that recover inside local_cwd
(its supervisor) are listed with their managed handles beside the driver's jobs, and nothing
else of local_cwd: not its plain jobs, not the attempts a driver submitted.

Here, not in torchx-managed: it needs torchx-sched-local (a target that recovers jobs) and
torchx-components (``utils.sh``); the e2e session installs every package. The same on the live
Slurm and LSF clusters is torchx-managed's ``test_managed_list_native.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from torchx.testing import run_cli


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

    for target, why in (("aws_sagemaker", "cannot recover jobs by itself"), ("nope", "not an installed scheduler")):
        bad = run_cli("list", "-s", "managed", "-cfg", f"targets={target}")
        assert bad.returncode != 0 and why in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
