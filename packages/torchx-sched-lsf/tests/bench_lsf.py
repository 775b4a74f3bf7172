"""Measures the lsf scheduler's figures (not a test; run it by hand against the live cluster).

    python tests/bench_lsf.py [--array-trials 100]

dryrun of 1x1000 replicas (target: <= 30 ms), submit -> RUNNING for a 1- and a 2-replica
job, and ``status`` of a running job (one ``bjobs`` call): see
:func:`torchx.testing.measure_scheduler`. Then a job array of N one-replica apps (a sweep's
trials): its dry run, its one ``bsub``, and ``describe`` of the array and of one element
(the array is cancelled afterwards).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from torchx import specs
from torchx.testing import measure_scheduler


def measure_array(n: int, job_dir: str) -> None:
    """Prints the dry run, submission and describe times of a job array of ``n`` apps."""
    from torchx.schedulers import get_scheduler_factories

    sched = get_scheduler_factories()["lsf"]("bench")
    apps = [
        specs.AppDef(
            f"bench-{i}",
            [specs.Role("t", image="/", entrypoint="sleep", args=["30", str(i)], resource=specs.Resource(1, 0, 64))],
        )
        for i in range(n)
    ]
    start = time.perf_counter()
    info = sched.submit_array_dryrun(apps, {"job_dir": job_dir}, max_parallel=2)
    dry = time.perf_counter() - start
    start = time.perf_counter()
    array_id = sched.schedule(info)
    submit = time.perf_counter() - start
    try:
        times: dict[str, list[float]] = {"array": [], "element": []}
        for _ in range(10):
            for what, app_id in (("array", array_id), ("element", sched.array_element_id(array_id, n - 1))):
                start = time.perf_counter()
                assert sched.describe(app_id) is not None
                times[what].append(time.perf_counter() - start)
    finally:
        sched.cancel(array_id)
    print(
        f"lsf job array of {n}: dry run {dry * 1000:.1f} ms (script {len(info.request.script) / 1000:.0f} kB),"
        f" one bsub {submit * 1000:.0f} ms; describe: array median {statistics.median(times['array']) * 1000:.0f} ms,"
        f" one element median {statistics.median(times['element']) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="lsf scheduler figures against the live cluster")
    parser.add_argument("--array-trials", type=int, default=100)
    args = parser.parse_args()
    measure_scheduler("lsf", {"job_dir": tempfile.mkdtemp(prefix="torchx-lsf-bench-")})
    measure_array(args.array_trials, tempfile.mkdtemp(prefix="torchx-lsf-bench-array-"))
