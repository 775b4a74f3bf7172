"""Measures local_cwd: run->SUCCEEDED latency, tail lag, log_lines of 1M lines, list of 1,000 jobs,
and ``torchx run -s local_cwd utils.echo`` end to end (when torchx-components is installed).

    python benchmarks/bench_local.py [--state-dir DIR] [--repeat N]

Uses a fresh state directory (a temporary one by default) and prints one line per figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _run_to_end(runner, app) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    handle = runner.run(app, "local_cwd")
    status = runner.wait(handle)
    elapsed = time.perf_counter() - t
    assert status is not None and status.state.name == "SUCCEEDED", status
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", default=None)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    state_dir = args.state_dir or tempfile.mkdtemp(prefix="torchx-bench-")
    os.environ["TORCHX_LOCAL_STATE_DIR"] = state_dir
    try:
        _measure(args.repeat)
    finally:
        if not args.state_dir:
            shutil.rmtree(state_dir, ignore_errors=True)


def _measure(repeat: int) -> None:
    from torchx import specs
    from torchx.runner import get_runner

    def true_app(n: int) -> specs.AppDef:
        return specs.AppDef("bench", [specs.Role("r", image="/tmp", entrypoint="/bin/true", num_replicas=n)])

    with get_runner() as runner:
        _run_to_end(runner, true_app(1))  # warm up imports and the plugin registry
        for n in (1, 32):
            times = sorted(_run_to_end(runner, true_app(n)) for _ in range(repeat))
            print(
                f"run->SUCCEEDED 1x{n} /bin/true: median {statistics.median(times) * 1e3:.1f} ms,"
                f" p90 {times[int(len(times) * 0.9)] * 1e3:.1f} ms, min {times[0] * 1e3:.1f} ms"
            )

        lags = []
        for _ in range(repeat):
            app = specs.AppDef(
                "lag", [specs.Role("r", image="/tmp", entrypoint="sh", args=["-c", "sleep 0.05; date +%s.%N"])]
            )
            handle = runner.run(app, "local_cwd")
            lines = list(runner.log_lines(handle, "r", 0, should_tail=True))
            lags.append(time.time() - float(lines[-1]))
        lags.sort()
        print(
            f"tail lag (replica's last line -> log_lines(should_tail) ends): median {statistics.median(lags) * 1e3:.1f} ms,"
            f" p90 {lags[int(len(lags) * 0.9)] * 1e3:.1f} ms"
        )

        script = "import sys; sys.stdout.write(''.join(f'line {i} of the log\\n' for i in range(1000000)))"
        app = specs.AppDef("bench", [specs.Role("r", image="/tmp", entrypoint="python3", args=["-c", script])])
        handle = runner.run(app, "local_cwd")
        runner.wait(handle)
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            lines = list(runner.log_lines(handle, "r", 0))
            best = min(best, time.perf_counter() - t)
        assert len(lines) == 1000000 and lines[-1] == "line 999999 of the log\n", (len(lines), lines[-1:])
        print(f"log_lines of 1,000,000 lines (finished job): {best * 1e3:.0f} ms (best of 5)")

        scheduler = runner.get_scheduler("local_cwd")
        existing = len(scheduler.list())
        apps = [true_app(1) for _ in range(1000 - existing)]
        for app in apps:
            runner.run(app, "local_cwd")
        for resp in scheduler.list():
            scheduler.wait(resp.app_id)
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            listed = runner.list("local_cwd")
            best = min(best, time.perf_counter() - t)
        print(f"list with {len(listed)} jobs: {best * 1e3:.0f} ms (best of 5)")

    cli = []
    for i in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "torchx", "run", "-s", "local_cwd", "utils.echo", "--msg", f"hi {i}"],
            capture_output=True,
            text=True,
            check=False,
        )
        cli.append(time.perf_counter() - t)
        if proc.returncode != 0 or f"echo/0 hi {i}" not in proc.stdout:
            print(f"torchx run utils.echo: run {i} failed or lost its output: {proc.stdout!r} {proc.stderr!r}")
            return
    cli.sort()
    print(
        f"torchx run -s local_cwd utils.echo --msg hi: median {statistics.median(cli) * 1e3:.0f} ms,"
        f" p90 {cli[int(len(cli) * 0.9)] * 1e3:.0f} ms; output shown in {len(cli)}/{len(cli)} runs"
    )


if __name__ == "__main__":
    main()
