"""Measures the ``managed`` scheduler's targets on local_cwd (needs torchx-managed, torchx-sched-local).

    python benchmarks/managed/bench_managed.py [--repeat 15]

* start: from ``Runner.run`` to the first ``status`` that says RUNNING, of ``sleep 30`` on
  ``local_cwd`` directly and through ``managed`` (targets=local_cwd), alternating; target:
  the managed median at most 50 ms above the direct one.
* reaction: an app that runs 1.5 s (the driver is watching by then), writes the time and
  exits 1 (max_restarts=1, ``restart_backoff=0``): from its exit to the driver journaling the
  end, and to the next attempt's submission; target: under 1 s. This is our overhead: the
  back-off a job waits before restarting after an application error (1 s by default, doubled
  per error in a row) is the job's policy, not our latency, so it is set to 0 here.
* driver RSS: VmRSS of the job's driver while an attempt runs (after one restart); target < 30 MB.

Every run uses fresh state directories under a temporary directory (removed afterwards).
Every managed job passes ``controller=local``: this measures the local driver (a job whose one
target is local_cwd otherwise recovers in its supervisor, with no driver).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXIT_AFTER_STAMP = (
    "import os, sys, time\n"
    "d = os.environ['TORCHX_CHECKPOINT_DIR']\n"
    "n = os.environ['TORCHX_ATTEMPT']\n"
    "if n == '0':\n"
    "    time.sleep(1.5)\n"
    "    open(os.path.join(d, 'exit-0'), 'w').write(repr(time.time()))\n"
    "    sys.exit(1)\n"
    "time.sleep(30)\n"
)


def _app(*cmd: str) -> Any:
    from torchx.specs import AppDef, Resource, Role

    role = Role("r", image=os.getcwd(), entrypoint=cmd[0], args=list(cmd[1:]), resource=Resource(1, 0, 64))
    return AppDef("bench", [role])


def _until_running(runner: Any, handle: str) -> float:
    from torchx.specs import AppState

    while True:
        status = runner.status(handle)
        if status is not None and status.state == AppState.RUNNING:
            return time.perf_counter()
        if status is not None and status.is_terminal():
            raise RuntimeError(f"{handle} ended: {status}")
        time.sleep(0.001)


def bench_start(runner: Any, repeat: int) -> tuple[float, float]:
    app = _app("sleep", "30")
    direct: list[float] = []
    managed: list[float] = []
    for i in range(repeat):
        for which in ("local_cwd", "managed") if i % 2 == 0 else ("managed", "local_cwd"):
            cfg = {"targets": ["local_cwd"], "controller": "local"} if which == "managed" else None
            start = time.perf_counter()
            handle = runner.run(app, which, cfg)
            (managed if which == "managed" else direct).append(_until_running(runner, handle) - start)
            runner.cancel(handle)
    return statistics.median(direct), statistics.median(managed)


def bench_reaction(runner: Any) -> tuple[float, float, float]:
    from torchx.specs.handles import parse_app_handle
    from torchx_managed.journal import ManagedStore

    handle = runner.run(
        _app(sys.executable, "-c", EXIT_AFTER_STAMP),
        "managed",
        {"targets": ["local_cwd"], "controller": "local", "max_restarts": 1, "restart_backoff": 0},
    )
    store, job_id = ManagedStore(), parse_app_handle(handle).app_id
    while len(store.load(job_id).attempts) < 2 or store.load(job_id).attempts[1].handle is None:
        time.sleep(0.01)
    state = store.load(job_id)
    exited = float((Path(state.spec["checkpoint_dir"]) / "exit-0").read_text())
    ended = state.attempts[0].ended or 0.0
    resubmitted = state.attempts[1].started
    time.sleep(0.5)
    pid = store.driver_pid(job_id) or 0
    rss_kb = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    runner.cancel(handle)
    return ended - exited, resubmitted - exited, rss_kb / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-managed-") as tmp:
        os.environ["TORCHX_LOCAL_STATE_DIR"] = os.path.join(tmp, "local")
        os.environ["TORCHX_MANAGED_STATE_DIR"] = os.path.join(tmp, "managed")
        os.chdir(tmp)
        from torchx.runner import get_runner

        with get_runner("bench") as runner:
            direct, managed = bench_start(runner, args.repeat)
            ended, resubmitted, rss = bench_reaction(runner)
    extra = (managed - direct) * 1000
    ok_start, ok_react, ok_rss = extra <= 50, resubmitted < 1.0, rss < 30
    print(f"start to RUNNING   direct {direct * 1000:.1f} ms  managed {managed * 1000:.1f} ms"
          f"  (+{extra:.1f} ms, target <= 50)  {'PASS' if ok_start else 'FAIL'}")  # fmt: skip
    print(f"failure acted on   end journaled {ended * 1000:.0f} ms, next attempt submitted {resubmitted * 1000:.0f} ms"
          f" after the exit, restart_backoff=0 (target < 1000)  {'PASS' if ok_react else 'FAIL'}")  # fmt: skip
    print(f"driver RSS         {rss:.1f} MB (target < 30)  {'PASS' if ok_rss else 'FAIL'}")
    return 0 if ok_start and ok_react and ok_rss else 1


if __name__ == "__main__":
    sys.exit(main())
