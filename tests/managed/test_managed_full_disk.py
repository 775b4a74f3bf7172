"""A managed job on a disk that fills (issue 29 point 2), with a real tmpfs (needs root): the
driver cannot record an attempt's end, ``torchx status`` says so and where instead of RUNNING,
a driver SIGKILLed meanwhile and started again by ``status`` says it too, and once space is back
the end is acted on (the next attempt runs, the job succeeds); a submission onto the full disk
is one line naming the file, and leaves nothing. No process of a job is left behind.

Needs torchx-sched-local (local_cwd), and torchx-components for the CLI submission: it is in the
root tests/ tree, which the e2e session runs with every package installed."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.runner import Runner, get_runner
from torchx.specs import AppState
from torchx.specs.handles import parse_app_handle
from torchx.testing import (
    alive,
    cmdline,
    command_app,
    eventually,
    fill_disk,
    processes_naming,
    run_cli,
    small_tmpfs,
    unmount,
)
from torchx.util.durable import PROBLEM
from torchx_managed.journal import ManagedStore

PAGE = 4096  # tmpfs allocates whole pages: an append that fits the journal's last page needs no space


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real 1 MiB tmpfs holding the managed state (unmounted afterwards)."""
    path = small_tmpfs(tmp_path / "disk", "1m")
    monkeypatch.setenv("TORCHX_MANAGED_STATE_DIR", str(path / "managed"))
    try:
        yield path
    finally:
        unmount(path)


def pad_journal_to_a_page(journal: Path) -> None:
    """Appends one event no reader acts on, so the journal ends on a page boundary: its next
    append needs a new page (a journal of a few hundred events has crossed pages many times)."""
    size = journal.stat().st_size
    empty = len(json.dumps({"ev": "pad", "x": ""}, separators=(",", ":"))) + 1
    need = PAGE - size % PAGE
    if need < empty:
        need += PAGE
    with open(journal, "a") as f:
        f.write(json.dumps({"ev": "pad", "x": "p" * (need - empty)}, separators=(",", ":")) + "\n")
    assert journal.stat().st_size % PAGE == 0


def status_json(handle: str) -> dict[str, Any]:
    run = run_cli("status", "--json", handle)
    assert run.returncode == 0, run.stderr
    data: dict[str, Any] = json.loads(run.stdout)
    return data


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("mdisk") as r:
        yield r


def test_an_end_that_cannot_be_recorded_is_told_and_acted_on_once_space_is_back(
    disk: Path, runner: Runner, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    script = f'while [ ! -e "{go}" ]; do sleep 0.02; done; [ "$TORCHX_ATTEMPT" = 1 ]'  # attempt 0 fails
    cfg: dict[str, Any] = {
        "targets": ["local_cwd"],
        "controller": "local",
        "max_restarts": 1,
        "restart_backoff": 0,
        "checkpoint_dir": str(tmp_path / "ckpt"),  # the app's own files are not on the small disk
    }
    handle = runner.run(command_app("sh", "-c", script, name="full"), "managed", cfg)
    job_id = parse_app_handle(handle).app_id
    store = ManagedStore()
    job = Path(store.job_dir(job_id))
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30, what="the driver writes its pid")
    first_driver = store.driver_pid(job_id) or 0

    pad_journal_to_a_page(job / "events.jsonl")
    filler = fill_disk(disk)
    go.touch()  # attempt 0 ends; its end cannot be written

    said = f"cannot record the end of attempt 0 (FAILED): no space left on device ({job / 'events.jsonl'})"
    eventually(lambda: said in status_json(handle)["msg"], timeout=30, what="status says what cannot be recorded")
    data = status_json(handle)
    assert data["state"] == "UNKNOWN", data  # not RUNNING: nothing acts on the attempt's end yet
    run = run_cli("status", handle)
    assert run.returncode == 0 and run.stdout.startswith("UNKNOWN"), run.stdout
    assert said in run.stdout and "(end not recorded yet)" in run.stdout, run.stdout
    run = run_cli("describe", "--json", handle)
    assert run.returncode == 0 and said in json.loads(run.stdout)["metadata"]["problem"], run.stdout
    assert alive(first_driver)  # it waits for space; it did not die

    # the case: the driver is gone, and each look starts one on the full disk
    told_at = (job / PROBLEM).stat().st_mtime_ns
    os.kill(first_driver, signal.SIGKILL)
    eventually(lambda: store.driver_pid(job_id) is None, timeout=10, what="the lock is let go")
    data = status_json(handle)  # starts a driver again
    assert data["state"] == "UNKNOWN" and said in str(data["msg"]), data
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30, what="the new driver writes its pid")
    second_driver = store.driver_pid(job_id) or 0
    assert second_driver != first_driver and alive(second_driver)
    eventually(  # it blanks the last driver's problem when it starts, and records its own
        lambda: (job / PROBLEM).stat().st_mtime_ns != told_at and said in status_json(handle)["msg"],
        timeout=30,
        what="the new driver says it too",
    )
    assert alive(second_driver)
    drivers = [p for p in processes_naming(job_id) if "torchx_managed.driver" in cmdline(p)]
    assert drivers == [second_driver]
    assert len(store.load(job_id).attempts) == 1  # nothing was started that the journal does not show
    assert [(a.app_handle, a.state) for a in runner.list("managed")] == [(handle, AppState.UNKNOWN)]
    run = run_cli("cancel", handle)  # a cancel that cannot be journaled cancels nothing, and says so
    assert run.returncode != 0 and run.stderr.strip().splitlines() == [
        f"torchx: error: cannot record the cancel of managed job {job_id}: no space left on device"
        f" ({job / 'events.jsonl'})"
    ], run.stderr
    assert alive(second_driver) and not store.load(job_id).cancelled

    filler.unlink()  # space is back: the end is recorded and acted on
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    state = store.load(job_id)
    assert [(a.state, a.cause, a.exit_code) for a in state.attempts] == [
        ("FAILED", "APP_ERROR", 1),
        ("SUCCEEDED", None, 0),
    ]
    assert (job / PROBLEM).read_text().strip() == ""
    data = status_json(handle)
    assert data["state"] == "SUCCEEDED" and "cannot record" not in str(data["msg"]), data
    eventually(lambda: processes_naming(job_id) == [], timeout=30, what="no process of the job is left")


def test_a_submission_onto_a_full_disk_is_one_line_and_leaves_nothing(disk: Path, runner: Runner) -> None:
    root = disk / "managed"
    root.mkdir(mode=0o700)
    fill_disk(disk)
    run = run_cli("run", "-s", "managed", "-cfg", "targets=local_cwd,controller=local", "utils.echo")
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    line = lines[0]
    assert line.startswith("torchx: error: cannot record managed job echo-"), line
    assert f"no space left on device ({root}/echo-" in line and line.endswith("/spec.json)"), line
    assert sorted(os.listdir(root)) == []  # no job directory, no spec.json.*.tmp
    assert [name for _, _, files in os.walk(disk) for name in files if ".tmp" in name] == []
    assert runner.list("local_cwd") == []  # nothing was submitted
    assert processes_naming(str(root)) == []  # no driver was started
