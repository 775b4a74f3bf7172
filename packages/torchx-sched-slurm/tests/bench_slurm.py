"""Measures the slurm scheduler's targets (not a test; run it by hand against the live cluster).

    python tests/bench_slurm.py

* dryrun of one role with 1000 replicas (target: <= 30 ms), median of 20 after a warm-up;
* ``status`` of a running job (target: <= 100 ms, one ``squeue`` call), median of 20;
* submit -> RUNNING on the idle cluster (target: <= 2 s), for a 1-replica and a 2-replica job.

(:func:`torchx.testing.measure_scheduler` does the measuring.)
"""

from __future__ import annotations

import tempfile

from torchx.testing import measure_scheduler

if __name__ == "__main__":
    measure_scheduler("slurm", {"job_dir": tempfile.mkdtemp(prefix="torchx-slurm-bench-")})
