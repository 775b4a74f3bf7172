"""Fault injection, issue 12 point 3: file descriptors are O(1) per replica.

Under a real ``ulimit -n`` (``setrlimit`` in the launcher process, inherited by the
supervisor): the supervisor holds 2 pipe ends per running replica and at most
``OPEN_LOG_FILES`` log files whatever the number of replicas, raising its soft limit up to
the hard one as far as the job needs. Where the hard limit is too low, the job fails
before any replica starts, saying what to change.
"""

from __future__ import annotations

import os
import resource
import time

import pytest
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import run_python
from torchx_sched_local import logfiles
from torchx_sched_local.local_scheduler import LocalScheduler

LAUNCH = """
import resource, sys
from torchx import specs
from torchx_sched_local.local_scheduler import LocalScheduler
soft, hard, n = map(int, sys.argv[1:4])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
role = specs.Role("r", image="/tmp", entrypoint="sh", args=["-c", "echo o; echo e >&2"], num_replicas=n)
print(LocalScheduler("t").submit(specs.AppDef("fds", [role]), {}))
"""


def _launch(soft: int, hard: int, replicas: int) -> str:
    proc = run_python(LAUNCH, str(soft), str(hard), str(replicas))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.slow
def test_a_thousand_replicas_under_ulimit_1024(sched: LocalScheduler) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # the usual setup: soft 1024, a higher hard limit
    app_id = _launch(1024, hard, 1000)
    desc = sched.wait(app_id, timeout=300)
    assert desc is not None, desc.msg
    assert desc.state == AppState.SUCCEEDED, desc.msg
    states = [r["state"] for r in (sched.store.state(app_id) or {})["replicas"]]
    assert states == ["SUCCEEDED"] * 1000
    # every stream of every replica is intact (read as log_iter reads them; log_iter itself for a sample)
    app = sched.store.app(app_id) or {}
    for spec in app["replicas"]:
        base = os.path.join(spec["log_dir"], "")
        assert list(logfiles.read_lines(base + "stdout")) == ["o\n"], spec
        assert list(logfiles.read_lines(base + "stderr")) == ["e\n"], spec
        assert sorted(logfiles.read_lines(base + "combined")) == ["e\n", "o\n"], spec
    for k in (0, 499, 999):
        assert list(sched.log_iter(app_id, "r", k, streams=Stream.STDERR)) == ["e\n"]


def test_a_hard_limit_too_low_fails_before_anything_starts(sched: LocalScheduler) -> None:
    t = time.monotonic()
    app_id = _launch(1024, 1024, 1000)
    desc = sched.wait(app_id, timeout=60)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert "not started: 1000 replicas need 2096 open files" in desc.msg, desc.msg
    assert "`ulimit -Hn` is 1024" in desc.msg, desc.msg
    assert "Traceback" not in desc.msg
    assert time.monotonic() - t < 30
    # nothing ran: no replica has a pid or wrote a log file
    assert all(r.get("pid") is None for r in (sched.store.state(app_id) or {})["replicas"])
    log_root = os.path.join(sched.store.job_dir(app_id), "logs")
    assert not [f for _, _, files in os.walk(log_root) for f in files]


def test_what_fits_the_hard_limit_runs(sched: LocalScheduler) -> None:
    app_id = _launch(256, 256, 80)  # 2 x 80 + 96 = 256
    desc = sched.wait(app_id, timeout=120)
    assert desc is not None, desc.msg
    assert desc.state == AppState.SUCCEEDED, desc.msg
    assert all(list(sched.log_iter(app_id, "r", k, streams=Stream.STDOUT)) == ["o\n"] for k in range(80))
