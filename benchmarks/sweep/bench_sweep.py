"""Measures torchx sweep's targets (needs torchx-sweep, torchx-sched-local; slurm: torchx-sched-slurm + a cluster).

    python benchmarks/sweep/bench_sweep.py [--trials 1000] [--slurm-trials 100] [--no-slurm]

* local_cwd: ``run_sweep`` of N trials of ``/bin/true`` with ``max_parallel=8`` until every
  trial SUCCEEDED (the driver journals its end). The whole wall time counts as overhead
  (``/bin/true`` does no work): target <= 10 ms per trial. Also split into the up-front
  part (materialize + dry-run every trial, store the spec, start the driver) and the rest.
* slurm: ``run_sweep`` of 100 trials is one ``sbatch --array`` submission: target < 1 s
  from the call to the returned handle (materializing, dry-running and submitting all 100).

Every run uses fresh state directories under a temporary directory (removed afterwards).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMPONENT = f"{Path(__file__).with_name('true_component.py')}:true"


def reference_run(runner: object, repeat: int = 30) -> float:
    """Median seconds of one plain ``Runner.run`` + ``wait`` of the same ``/bin/true`` app (the
    machine's speed right now: what any sweep of it costs at least, trial by trial)."""
    import statistics

    from torchx.runner import Runner
    from torchx_sweep.submit import Materializer

    assert isinstance(runner, Runner)
    app = Materializer(COMPONENT).app(["--i=0"])
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        runner.wait(runner.run(app, "local_cwd"))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_local(n: int) -> bool:
    from torchx.runner import get_runner
    from torchx_sweep import run_sweep

    with get_runner("bench") as runner:
        before = reference_run(runner)
        start = time.perf_counter()
        sweep = run_sweep(runner, COMPONENT, [], [{"i": i} for i in range(n)], "local_cwd", max_parallel=8)
        submitted = time.perf_counter()
        status = sweep.wait(interval=0.05)
        end = time.perf_counter()
        after = reference_run(runner)
    ok = status["state"] == "SUCCEEDED" and all(t["state"] == "SUCCEEDED" for t in status["trials"])
    per_trial = (end - start) / n * 1000
    verdict = "PASS" if ok and per_trial <= 10 else "FAIL"
    print(
        f"local_cwd {n} x /bin/true, max_parallel 8: {end - start:.2f} s total ="
        f" {per_trial:.2f} ms/trial (up front: {submitted - start:.2f} s; driver: {end - submitted:.2f} s);"
        f" all succeeded: {ok}; target <= 10 ms/trial: {verdict}"
    )
    print(
        f"  reference on this machine now: one plain run+wait of the same app takes {before * 1000:.1f} ms"
        f" (before) / {after * 1000:.1f} ms (after); load average {os.getloadavg()[0]:.1f}"
    )
    return verdict == "PASS"


def bench_slurm(n: int) -> bool:
    from torchx.runner import get_runner
    from torchx_sweep import run_sweep
    from torchx_sweep.store import SweepStore

    job_dir = tempfile.mkdtemp(prefix="torchx-sweep-bench-slurm-")
    partition = os.environ.get("TORCHX_TEST_SLURM_PARTITION", "debug")
    cfg = {"partition": partition, "job_dir": job_dir}
    with get_runner("bench") as runner:
        run_sweep(runner, COMPONENT, [], [{"i": 0}, {"i": 1}], "slurm", cfg)  # warm: imports, plugin cache
        start = time.perf_counter()
        sweep = run_sweep(runner, COMPONENT, [], [{"i": i} for i in range(n)], "slurm", cfg, max_parallel=8)
        took = time.perf_counter() - start
        spec = SweepStore().load(sweep.sweep_id).spec
        array_id = spec["array_handle"].rsplit("/", 1)[-1]
        shown = subprocess.run(["scontrol", "show", "job", array_id], capture_output=True, text=True).stdout
        status = sweep.wait(timeout=600, interval=1.0)
    one = spec["mode"] == "array" and "ArrayTaskThrottle=8" in shown
    verdict = "PASS" if one and took < 1.0 else "FAIL"
    print(
        f"slurm {n} trials: one sbatch --array submission ({array_id}, throttle 8: {one}) in {took * 1000:.0f} ms;"
        f" then {status['state']}; target < 1 s: {verdict}"
    )
    return verdict == "PASS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--slurm-trials", type=int, default=100)
    parser.add_argument("--no-slurm", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="torchx-sweep-bench-") as tmp:
        os.environ["TORCHX_LOCAL_STATE_DIR"] = os.path.join(tmp, "local")
        os.environ["TORCHX_SWEEP_STATE_DIR"] = os.path.join(tmp, "sweeps")
        os.chdir(tmp)
        ok = bench_local(args.trials)
        if not args.no_slurm:
            ok = bench_slurm(args.slurm_trials) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
