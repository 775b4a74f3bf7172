"""The on-disk sweep: spec written atomically, journal folded into state, torn lines ignored, driver lock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from torchx_sweep.api import rollup
from torchx_sweep.store import EVENTS, SweepStore, UnknownSweepError


def _spec(sweep_id: str = "s-1") -> dict[str, object]:
    return {"id": sweep_id, "handle": f"sweep://t/{sweep_id}", "mode": "driver", "trials": [{"args": {"a": "1"}}] * 3}


def test_journal_folds_into_trial_states(tmp_path: Path) -> None:
    store = SweepStore(str(tmp_path))
    store.create(_spec())
    store.append("s-1", {"i": 0, "ev": "submitting", "name": "x-0"}, {"i": 0, "ev": "submitted", "handle": "h0"})
    store.append("s-1", {"i": 0, "ev": "ended", "state": "SUCCEEDED"}, {"i": 1, "ev": "submitting", "name": "x-1"})
    with open(os.path.join(store.sweep_dir("s-1"), EVENTS), "a") as f:
        f.write('{"i": 2, "ev": "submitted", "handle": "h2"')  # a writer killed mid-line
    state = store.load("s-1")
    assert [(t.state, t.handle, t.submitting) for t in state.trials] == [
        ("SUCCEEDED", "h0", None),
        ("PENDING", None, "x-1"),
        ("PENDING", None, None),
    ]
    assert not state.cancelled and not state.finished
    store.append("s-1", {"ev": "cancel"})
    assert store.load("s-1").cancelled
    assert store.sweep_ids() == ["s-1"]


def test_unknown_sweep_says_how_to_list(tmp_path: Path) -> None:
    with pytest.raises(UnknownSweepError, match="torchx sweep list"):
        SweepStore(str(tmp_path)).load("nope")
    with pytest.raises(UnknownSweepError):
        SweepStore(str(tmp_path)).sweep_dir("../x")


def test_driver_lock_is_exclusive_and_names_the_holder(tmp_path: Path) -> None:
    store = SweepStore(str(tmp_path))
    store.create(_spec())
    assert store.driver_pid("s-1") is None
    code = (
        "import sys, time; from torchx_sweep.store import SweepStore\n"
        "with SweepStore(sys.argv[1]).driver_lock('s-1') as held:\n"
        "    print(held, flush=True); time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "True"
        assert store.driver_pid("s-1") == proc.pid
        with store.driver_lock("s-1") as held:
            assert held is False
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while store.driver_pid("s-1") is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.driver_pid("s-1") is None  # a SIGKILLed driver releases the lock


def test_rollup() -> None:
    assert rollup(["SUCCEEDED", "RUNNING"], False) == "RUNNING"
    assert rollup(["SUCCEEDED", "SUCCEEDED"], False) == "SUCCEEDED"
    assert rollup(["SUCCEEDED", "FAILED"], False) == "FAILED"
    assert rollup(["SUCCEEDED", "CANCELLED"], True) == "CANCELLED"
