"""Measures the slurm scheduler's targets (not a test; run it by hand against the live cluster).

    python tests/bench_slurm.py

* dryrun of one role with 1000 replicas (target: <= 30 ms), median of 20 after a warm-up;
* ``status`` of a running job (target: <= 100 ms, one ``squeue`` call), median of 20;
* submit -> RUNNING on the idle cluster (target: <= 2 s), for a 1-replica and a 2-replica job.
"""

from __future__ import annotations

import statistics
import tempfile
import time

from torchx import specs
from torchx.runner import get_runner


def role(replicas: int, cmd: str = "sleep 30") -> specs.Role:
    return specs.Role(
        "w",
        image="/tmp",
        entrypoint="bash",
        args=["-c", cmd],
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=256),
    )


def main() -> None:
    job_dir = tempfile.mkdtemp(prefix="torchx-slurm-bench-")
    with get_runner("bench") as runner:
        big = specs.AppDef("big", [role(1000)])
        runner.dryrun(big, "slurm")
        times = []
        for _ in range(20):
            start = time.perf_counter()
            runner.dryrun(big, "slurm")
            times.append(time.perf_counter() - start)
        print(f"dryrun 1x1000 replicas (Runner.dryrun): median {statistics.median(times) * 1000:.1f} ms")

        for replicas in (1, 2):
            start = time.perf_counter()
            handle = runner.run(specs.AppDef("bench", [role(replicas)]), "slurm", {"job_dir": job_dir})
            submitted = time.perf_counter() - start
            while (status := runner.status(handle)) is not None and status.state != specs.AppState.RUNNING:
                time.sleep(0.02)
            running = time.perf_counter() - start
            print(f"{replicas}-replica job: sbatch {submitted * 1000:.0f} ms, RUNNING after {running:.2f} s")
            times = []
            for _ in range(20):
                start = time.perf_counter()
                runner.status(handle)
                times.append(time.perf_counter() - start)
            print(f"  status of the running job: median {statistics.median(times) * 1000:.1f} ms")
            runner.cancel(handle)


if __name__ == "__main__":
    main()
