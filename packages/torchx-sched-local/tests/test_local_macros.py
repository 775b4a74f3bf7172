"""Macros reach local_cwd replicas as data: real processes started from a hostile directory."""

from __future__ import annotations

from pathlib import Path

from torchx import specs
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_local.local_scheduler import LocalScheduler


def test_macro_values_from_a_hostile_directory_run_nothing(sched: LocalScheduler, isolated: Path) -> None:
    marker = isolated / "pwned"
    cwd = isolated / hostile_value(str(marker))  # p'$(touch .../pwned)'x ... (nested directories)
    cwd.mkdir(parents=True)
    role = macro_probe(str(cwd), str(marker), num_replicas=2)
    app_id = sched.submit(specs.AppDef("macros", [role]), {})
    desc = sched.wait(app_id, timeout=60)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    for k in (0, 1):
        out = "".join(sched.log_iter(app_id, "probe", k, streams=Stream.STDOUT))
        assert out == macro_probe_output(str(cwd), app_id, k)
    assert not marker.exists()
