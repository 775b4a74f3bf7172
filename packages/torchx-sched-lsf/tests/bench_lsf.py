"""Measures the lsf scheduler's figures (not a test; run it by hand against the live cluster).

    python tests/bench_lsf.py

* dryrun of one role with 1000 replicas (target: <= 30 ms), median of 20 after a warm-up;
* ``status`` of a running job (one ``bjobs`` call, plus the JSON probe on the first call), median of 20;
* submit -> RUNNING on the idle cluster, for a 1-replica and a 2-replica job.
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
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
    )


def main() -> None:
    job_dir = tempfile.mkdtemp(prefix="torchx-lsf-bench-")
    with get_runner("bench") as runner:
        big = specs.AppDef("big", [role(1000)])
        runner.dryrun(big, "lsf")
        times = []
        for _ in range(20):
            start = time.perf_counter()
            runner.dryrun(big, "lsf")
            times.append(time.perf_counter() - start)
        print(f"dryrun 1x1000: median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
        for replicas in (1, 2):
            start = time.perf_counter()
            handle = runner.run(specs.AppDef("b", [role(replicas)]), "lsf", {"job_dir": job_dir})
            while (st := runner.status(handle)) is not None and st.state != specs.AppState.RUNNING:
                time.sleep(0.05)
            print(f"submit -> RUNNING, {replicas} replica(s): {time.perf_counter() - start:.2f} s")
            times = []
            for _ in range(20):
                start = time.perf_counter()
                runner.status(handle)
                times.append(time.perf_counter() - start)
            print(f"status of a running job: median {statistics.median(times) * 1000:.1f} ms")
            runner.cancel(handle)


if __name__ == "__main__":
    main()
