"""A managed job whose attempt's scheduler plugin is uninstalled under it: its driver cannot
watch the attempt, says so in ``status`` (not a silent RUNNING), stops, and a look after the
plugin is back starts a driver that takes the job to its end.

Needs torchx-sched-local and torchx-components (the e2e session installs every package)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from torchx.testing import run_cli
from torchx.testing.processes import alive, eventually
from torchx_managed.journal import ManagedStore


def make_plugin(site: Path) -> Path:
    """A distribution in ``site`` whose scheduler ``gone`` is local_cwd; returns its dist-info."""
    (site / "gone_sched.py").write_text("from torchx_sched_local.local_scheduler import create_scheduler\n")
    info = site / "torchx_gone-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchx-gone\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torchx]\nscheduler.gone = gone_sched:create_scheduler\n")
    return info


def status(handle: str, env: dict[str, str]) -> dict[str, Any]:
    run = run_cli("status", "--json", handle, env=env)
    assert run.returncode == 0, run.stderr
    data: dict[str, Any] = json.loads(run.stdout)
    return data


def test_an_attempt_whose_scheduler_is_uninstalled_is_reported_and_resumed_once_it_is_back(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    info = make_plugin(site)
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}
    go = tmp_path / "go"
    run = run_cli(
        "run", "-s", "managed", "-cfg", "targets=gone,controller=local", "utils.sh", "sh", "-c",
        f"while [ ! -e '{go}' ]; do sleep 0.05; done", env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    store, job_id = ManagedStore(), handle.rsplit("/", 1)[1]
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30, what="its driver runs")
    eventually(lambda: store.load(job_id).attempts and store.load(job_id).attempts[0].handle, timeout=30)

    hidden = tmp_path / "hidden"
    shutil.move(str(info), hidden)  # uninstalled, as pip does, while the attempt runs
    driver = store.driver_pid(job_id)
    assert driver is not None
    os.kill(driver, 9)  # the next look starts a driver that cannot load the plugin
    eventually(lambda: not alive(driver), timeout=10)

    seen: list[dict[str, Any]] = []

    def reported() -> bool:
        seen.append(status(handle, env))
        return "cannot be watched" in seen[-1].get("msg", "") and seen[-1]["state"] == "UNKNOWN"

    eventually(reported, timeout=30, what="status says the attempt cannot be watched")
    data = seen[-1]
    assert "unknown scheduler 'gone'" in data["msg"] and "install it where the driver runs" in data["msg"], data
    assert len(data["attempts"]) == 1  # no new attempt for a scheduler it cannot ask
    eventually(lambda: store.driver_pid(job_id) is None, timeout=10, what="the driver that cannot watch stops")

    shutil.move(str(hidden), info)  # installed again
    go.touch()

    def succeeded() -> bool:
        return status(handle, env)["state"] == "SUCCEEDED"

    eventually(succeeded, timeout=60, what="a look starts a driver that ends the job")
    data = status(handle, env)
    assert [(a["attempt"], a["state"]) for a in data["attempts"]] == [(0, "SUCCEEDED")], data
    assert "cannot be watched" not in data.get("msg", "")
