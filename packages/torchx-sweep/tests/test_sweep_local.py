"""Sweeps of real processes through the detached driver: grid, byte-identical args, up-front
checks, fail-fast, cancel, and a driver SIGKILLed mid-sweep that resumes with nothing lost or
run twice. They run on core's test scheduler (``sched``: :mod:`torchx.testing.procs`), so they
need no scheduler distribution; the live backends' array sweeps are in test_sweep_live.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner import Runner, get_runner
from torchx_sweep import Sweep, SweepSpecError, run_sweep
from torchx_sweep.store import SweepStore

CLI = [sys.executable, "-m", "torchx.cli.main", "sweep"]
HOSTILE = ["it's", 'say "hi"', "two  spaces", "$(touch pwned)", "`id`", "a;b|c&d", "back\\slash", "€ ünï", "*"]


@pytest.fixture
def runner(sched: str) -> Iterator[Runner]:
    with get_runner("sweeptest") as r:
        yield r


def outputs(runner: Runner, sweep: Sweep) -> dict[int, list[str]]:
    """What each trial printed (its two arguments, decoded)."""
    return {t.index: json.loads("".join(runner.log_lines(str(t.handle), "argv", 0))) for t in sweep.trials()}


def test_grid_2x2_runs_every_trial_once_with_its_args(sched: str, runner: Runner, components: str) -> None:
    sweep = run_sweep(runner, f"{components}:argv", [], {"a": ["x", "y"], "b": ["1", "2"]}, sched, max_parallel=2)
    assert sweep.handle.startswith("sweep://sweeptest/argv-")
    status = sweep.wait(timeout=60)
    assert status["state"] == "SUCCEEDED", status
    assert [(t["index"], t["args"], t["state"]) for t in status["trials"]] == [
        (0, {"a": "x", "b": "1"}, "SUCCEEDED"),
        (1, {"a": "x", "b": "2"}, "SUCCEEDED"),
        (2, {"a": "y", "b": "1"}, "SUCCEEDED"),
        (3, {"a": "y", "b": "2"}, "SUCCEEDED"),
    ]
    assert len({t["handle"] for t in status["trials"]}) == 4
    assert outputs(runner, sweep) == {0: ["x", "1"], 1: ["x", "2"], 2: ["y", "1"], 3: ["y", "2"]}
    assert status["driver"] == "finished"


def test_hostile_args_arrive_byte_identical_through_the_cli(
    sched: str, tmp_path: Path, components: str, isolated: Path
) -> None:
    trials = tmp_path / "trials.jsonl"
    trials.write_text("".join(json.dumps({"a": h, "b": h[::-1]}) + "\n" for h in HOSTILE))
    proc = subprocess.run(
        [
            *CLI,
            "-s",
            sched,
            "--trials",
            str(trials),
            "--max-parallel",
            "3",
            "--wait",
            "--json",
            f"{components}:argv",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert status["state"] == "SUCCEEDED"
    with get_runner("torchx") as runner:
        got = outputs(runner, Sweep(status["handle"], runner))
    assert got == {i: [h, h[::-1]] for i, h in enumerate(HOSTILE)}
    assert not (isolated / "pwned").exists()


def test_a_bad_value_fails_the_whole_sweep_up_front(sched: str, runner: Runner, components: str) -> None:
    with pytest.raises(SweepSpecError, match=r"trial 1 \{\"n\": \"abc\"\}.*nothing was submitted"):
        run_sweep(runner, f"{components}:typed", [], [{"n": 1}, {"n": "abc"}], sched)
    assert SweepStore().sweep_ids() == []
    assert runner.list(sched) == []


def test_cli_bad_input_is_one_line_without_traceback(sched: str, components: str) -> None:
    cmd = [*CLI, "-s", sched]
    for extra, words in [
        (["--param", "n=1,abc", f"{components}:typed"], "trial 1"),
        (["--param", "n=uniform(0,1)", f"{components}:typed"], "--random N"),
        (["--param", "n=1"], "no component given"),
        (["status", "sweep://torchx/nope"], "unknown sweep"),
    ]:
        proc = subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0
        assert "Traceback" not in proc.stderr and words in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("torchx"), proc.stderr


def test_status_json_shape_and_dryrun(sched: str, components: str) -> None:
    cli = CLI
    dry = subprocess.run(
        [*cli, "-s", sched, "--param", "a=p,q", "--param", "b=1", "--dryrun", "--json", f"{components}:argv"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    plan = json.loads(dry.stdout)
    assert plan["mode"] == "driver" and [t["args"] for t in plan["trials"]] == [
        {"a": "p", "b": "1"},
        {"a": "q", "b": "1"},
    ]
    assert all("python3" in t["request"] for t in plan["trials"]) and SweepStore().sweep_ids() == []
    handle = subprocess.run(
        [*cli, "-s", sched, "--param", "a=p,q", "--param", "b=1", f"{components}:argv"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    out = subprocess.run([*cli, "wait", handle, "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert {"handle", "state", "trials"} <= set(status) and status["handle"] == handle
    assert all({"index", "args", "state", "handle"} <= set(t) for t in status["trials"])
    listed = json.loads(subprocess.run([*cli, "list", "--json"], capture_output=True, text=True, timeout=60).stdout)
    assert [s["handle"] for s in listed] == [handle]


def test_failed_trial_does_not_stop_the_others_unless_fail_fast(sched: str, runner: Runner, components: str) -> None:
    trials = [{"a": "fail", "b": "0"}, {"a": "ok", "b": "1"}, {"a": "ok", "b": "2"}]
    sweep = run_sweep(runner, f"{components}:argv", [], trials, sched, max_parallel=1)
    status = sweep.wait(timeout=60)
    assert status["state"] == "FAILED"
    assert [t["state"] for t in status["trials"]] == ["FAILED", "SUCCEEDED", "SUCCEEDED"]

    fast = run_sweep(runner, f"{components}:argv", [], trials, sched, max_parallel=1, fail_fast=True)
    status = fast.wait(timeout=60)
    assert status["state"] == "FAILED"
    assert [t["state"] for t in status["trials"]] == ["FAILED", "CANCELLED", "CANCELLED"]
    assert [t["handle"] is None for t in status["trials"]] == [False, True, True]


def test_cancel_stops_every_trial(sched: str, runner: Runner, components: str) -> None:
    trials = [{"a": str(i), "b": "x"} for i in range(5)]
    sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "60"], trials, sched, max_parallel=2)
    deadline = time.monotonic() + 30
    while sum(t.state == "RUNNING" for t in sweep.trials()) < 2:
        assert time.monotonic() < deadline, sweep.status()
        time.sleep(0.05)
    started = time.monotonic()
    sweep.cancel()
    status = sweep.wait(timeout=30)
    assert time.monotonic() - started < 20
    assert status["state"] == "CANCELLED"
    assert [t["state"] for t in status["trials"]] == ["CANCELLED"] * 5
    assert sum(t["handle"] is not None for t in status["trials"]) == 2
    assert not sweep.driver_alive()
    assert all(a.state.name == "CANCELLED" for a in runner.list(sched))


def test_sigkilled_driver_resumes_nothing_lost_or_run_twice(
    sched: str, runner: Runner, components: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.txt"
    trials = [{"a": f"t{i}", "b": "x"} for i in range(8)]
    args = ["--sleep", "0.4", "--runs_file", str(runs)]
    sweep = run_sweep(runner, f"{components}:argv", args, trials, sched, max_parallel=2)
    deadline = time.monotonic() + 30
    while sum(t.state == "SUCCEEDED" for t in sweep.trials()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    pid = SweepStore().driver_pid(sweep.sweep_id)
    assert pid and pid > 0
    os.kill(pid, signal.SIGKILL)
    while sweep.driver_alive():
        time.sleep(0.01)
    mid = sweep.status()
    assert mid["state"] == "RUNNING" and mid["driver"] == "stopped"
    assert any(t["state"] == "PENDING" and t["handle"] is None for t in mid["trials"])  # work was left
    status = sweep.wait(timeout=60)  # restarts the driver
    assert status["state"] == "SUCCEEDED", status
    lines = runs.read_text().splitlines()
    assert sorted(json.loads(x)[0] for x in lines) == sorted(t["a"] for t in trials)  # each ran exactly once
    apps = [a for a in runner.list(sched)]
    assert len(apps) == 8


def test_resume_adopts_a_submission_in_flight(sched: str, runner: Runner, components: str) -> None:
    """The driver was killed between submitting a trial and journaling its handle: found by name, not rerun."""
    sweep = run_sweep(runner, f"{components}:argv", ["--sleep", "30"], [{"a": "only", "b": "x"}], sched)
    deadline = time.monotonic() + 30
    while sweep.trials()[0].handle is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(SweepStore().driver_pid(sweep.sweep_id) or 0, signal.SIGKILL)
    while sweep.driver_alive():
        time.sleep(0.01)
    # rewrite the journal as it stood just before "submitted" was written
    store = SweepStore()
    path = os.path.join(store.sweep_dir(sweep.sweep_id), "events.jsonl")
    events = [json.loads(x) for x in Path(path).read_text().splitlines()]
    Path(path).write_text("".join(json.dumps(e) + "\n" for e in events if e.get("ev") == "submitting"))
    handle = events[1]["handle"]
    assert sweep.trials()[0].handle is None
    assert sweep.resume()
    while sweep.trials()[0].handle is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert sweep.trials()[0].handle == handle
    sweep.cancel()
    assert sweep.wait(timeout=30)["state"] == "CANCELLED"
    assert len(runner.list(sched)) == 1


def test_fail_fast_with_many_submitters_cancels_everything_else(sched: str, runner: Runner, components: str) -> None:
    """max_parallel 8: several submitter processes; the first failure stops them all."""
    trials = [{"a": "ok", "b": "0", "sleep": "30"}, {"a": "fail", "b": "1", "sleep": "0.5"}]
    trials += [{"a": "ok", "b": str(i), "sleep": "30"} for i in range(2, 30)]
    sweep = run_sweep(runner, f"{components}:argv", [], trials, sched, max_parallel=8, fail_fast=True)
    started = time.monotonic()
    status = sweep.wait(timeout=60)
    assert time.monotonic() - started < 25
    assert status["state"] == "FAILED"
    assert status["driver"] == "finished"
    states = [t["state"] for t in status["trials"]]
    assert states[1] == "FAILED", states
    assert states[:1] + states[2:] == ["CANCELLED"] * 29, states
    submitted = [t for t in status["trials"] if t["handle"] is not None]
    assert 1 < len(submitted) <= 8  # the others were never submitted
    assert all(a.state.name in ("FAILED", "CANCELLED") for a in runner.list(sched))


def _printed_b(runner: Runner, sweep: Sweep) -> list[str]:
    return [outputs(runner, sweep)[t.index][1] for t in sweep.trials()]


def test_component_defaults_reach_trials_as_for_torchx_run(
    sched: str, runner: Runner, components: str, isolated: Path, tmp_path: Path
) -> None:
    """[component:NAME] of .torchxconfig: the same default ``torchx run`` applies, also in a
    driver resumed from a directory without that config; and get_runner(component_defaults=)."""
    component = f"{components}:argv"
    (isolated / ".torchxconfig").write_text(f"[component:{component}]\nb = from config\n")
    run = subprocess.run(
        [sys.executable, "-m", "torchx.cli.main", "run", "-s", sched, "--wait", "--log", component, "--a", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert '["x", "from config"]' in run.stdout + run.stderr, run.stdout + run.stderr

    trials = [{"a": f"t{i}"} for i in range(3)]
    sweep = run_sweep(runner, component, ["--sleep", "0.5"], trials, sched, max_parallel=1)
    while sweep.trials()[0].handle is None:
        time.sleep(0.02)
    os.kill(SweepStore().driver_pid(sweep.sweep_id) or 0, signal.SIGKILL)
    while sweep.driver_alive():
        time.sleep(0.01)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)  # no .torchxconfig here: the resumed driver must use what the sweep stored
    status = sweep.wait(timeout=60)
    assert status["state"] == "SUCCEEDED", status
    assert _printed_b(runner, sweep) == ["from config"] * 3

    with get_runner("sweeptest", component_defaults={component: {"b": "from runner"}}) as own:
        sweep = run_sweep(own, component, [], [{"a": "y"}], sched)
        assert sweep.wait(timeout=60)["state"] == "SUCCEEDED"
        assert _printed_b(own, sweep) == ["from runner"]


def test_a_submitter_killed_mid_sweep_loses_nothing_and_runs_nothing_twice(
    sched: str, runner: Runner, components: str, tmp_path: Path
) -> None:
    """max_parallel 4: four submitter processes under the driver; SIGKILL one of them mid-sweep."""
    runs = tmp_path / "runs.txt"
    trials = [{"a": f"t{i}", "b": "x"} for i in range(16)]
    sweep = run_sweep(
        runner, f"{components}:argv", ["--sleep", "0.3", "--runs_file", str(runs)], trials, sched, max_parallel=4
    )
    deadline = time.monotonic() + 30
    while sum(t.state == "SUCCEEDED" for t in sweep.trials()) < 4:
        assert time.monotonic() < deadline, sweep.status()
        time.sleep(0.02)
    driver = SweepStore().driver_pid(sweep.sweep_id)
    assert driver and driver > 0
    submitters = [int(p) for p in Path(f"/proc/{driver}/task/{driver}/children").read_text().split()]
    assert len(submitters) == 4
    os.kill(submitters[0], signal.SIGKILL)
    status = sweep.wait(timeout=60)
    assert status["state"] == "SUCCEEDED", status
    assert status["driver"] == "finished"
    lines = runs.read_text().splitlines()
    assert sorted(json.loads(x)[0] for x in lines) == sorted(t["a"] for t in trials)  # each ran exactly once
    assert len(runner.list(sched)) == 16
    journaled = SweepStore().load(sweep.sweep_id).trials  # the journal itself, no scheduler asked
    assert [t.state for t in journaled] == ["SUCCEEDED"] * 16
    assert "a submitter died" in Path(SweepStore().sweep_dir(sweep.sweep_id), "driver.log").read_text()
