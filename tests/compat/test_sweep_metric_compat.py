"""What a new user meets with ``torchx sweep ... --metric`` and no tracker configured."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sweep")
pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")


def test_metric_without_tracker_says_how_to_configure_one(isolated: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHX_TRACKER")}
    env["TORCHXCONFIG"] = ""  # no config file: no tracker
    start = run_torchx("sweep", "-s", "local_cwd", "--param", "msg=a,b", "utils.echo", env=env)
    assert start.returncode == 0, start.stderr
    handle = start.stdout.split()[0]
    proc = run_torchx("sweep", "wait", handle, "--metric", "loss", "--min", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "tracker" in line]
    assert len(lines) == 1, proc.stderr
    assert "--metric loss" in lines[0]
    assert "[torchx:tracker]" in lines[0] and "[tracker:fsspec]" in lines[0]
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    sweeps = readme[readme.index("### Sweeps") :]
    assert "[torchx:tracker]" in sweeps[: sweeps.index("\n### ", 5)]
