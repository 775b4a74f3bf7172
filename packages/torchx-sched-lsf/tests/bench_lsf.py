"""Measures the lsf scheduler's figures (not a test; run it by hand against the live cluster).

    python tests/bench_lsf.py

dryrun of 1x1000 replicas (target: <= 30 ms), submit -> RUNNING for a 1- and a 2-replica
job, and ``status`` of a running job (one ``bjobs`` call): see
:func:`torchx.testing.measure_scheduler`.
"""

from __future__ import annotations

import tempfile

from torchx.testing import measure_scheduler

if __name__ == "__main__":
    measure_scheduler("lsf", {"job_dir": tempfile.mkdtemp(prefix="torchx-lsf-bench-")})
