"""What a new user meets with ``torchx sweep ... --metric`` and no tracker configured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sweep")
pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")
pytest.importorskip("torchx_tracker")

CLI = [sys.executable, "-m", "torchx.cli.main", "sweep"]


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


def test_metric_is_read_from_the_tracker_the_sweep_recorded_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sweep wait --metric`` reads the tracker the sweep recorded at submission, also from a
    directory without that ``.torchxconfig`` (utils.booth on local_cwd, the fsspec tracker)."""
    from torchx_sweep.store import SweepStore

    for name in [n for n in os.environ if n.startswith(("TORCHX_TRACKER", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID"))]:
        monkeypatch.delenv(name)
    # the trials run `python -m torchx_components.apps.booth`: this interpreter's
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    Path(".torchxconfig").write_text(f"[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = {tmp_path / 'runs'}\n")
    submit = [*CLI, "-s", "local_cwd", "--param", "x1=1,2", "--param", "x2=3", "utils.booth"]
    handle = subprocess.run(submit, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert SweepStore().load(handle.rsplit("/", 1)[1]).spec["trackers"] == {"fsspec": str(tmp_path / "runs")}
    elsewhere = tmp_path / "elsewhere"  # no .torchxconfig: only the sweep's record names the tracker
    elsewhere.mkdir()
    out = subprocess.run(
        [*CLI, "wait", handle, "--metric", "booth_eval", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=elsewhere,
    )
    assert out.returncode == 0, out.stderr
    assert "no tracker is configured" not in out.stderr
    metrics = {t["args"]["x1"]: t["metric"] for t in json.loads(out.stdout)["trials"]}
    assert metrics == {"1": 0.0, "2": 5.0}  # booth(1, 3) = 0, booth(2, 3) = 5
