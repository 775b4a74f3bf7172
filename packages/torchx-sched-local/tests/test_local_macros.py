"""Macros reach local_cwd replicas as data: real processes started from a hostile directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from torchx import specs
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_local.local_scheduler import LocalScheduler


def test_macro_values_from_a_hostile_directory_run_nothing(
    sched: LocalScheduler, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = isolated / "pwned"
    cwd = isolated / hostile_value(str(marker))  # p'$(touch .../pwned)'x ... (nested directories)
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)  # local_cwd: replicas start in (and img_root is) the launcher's cwd
    role = macro_probe("ignored", str(marker), num_replicas=2)
    app_id = sched.submit(specs.AppDef("macros", [role]), {})
    desc = sched.wait(app_id, timeout=60)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    for k in (0, 1):
        out = "".join(sched.log_iter(app_id, "probe", k, streams=Stream.STDOUT))
        assert out == macro_probe_output(str(cwd), app_id, k)
    assert not marker.exists()


def test_docker_request_passes_macro_values_as_data(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from torchx_sched_local import docker_scheduler

    marker = tmp_path / "pwned"
    app_id = hostile_value(str(marker))  # a real id is [a-z0-9-]: this checks the request, not the id
    monkeypatch.setattr(docker_scheduler, "make_unique", lambda name: app_id)
    sched = docker_scheduler.DockerScheduler("test")
    job = sched.submit_dryrun(specs.AppDef("m", [macro_probe("busybox", str(marker), num_replicas=2)]), {}).request
    for k, c in enumerate(job.containers):  # run each container's command here, as the engine would (exec form)
        out = subprocess.run(c.command, env={"PATH": os.defpath, **c.env}, capture_output=True, text=True, check=True)
        assert out.stdout == macro_probe_output("", app_id, k)
    assert not marker.exists()
