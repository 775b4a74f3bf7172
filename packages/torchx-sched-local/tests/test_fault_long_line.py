"""Fault injection, issue 12 point 8: a 100 MB single line, and each byte stored once.

A real replica writes one 100 MB line. The supervisor (after its handover to a fresh
interpreter, ``VmHWM`` from ``/proc``) holds none of it in memory; the replica directory
holds its bytes once (``combined`` is an index over ``stdout``/``stderr``); and reading it
back through ``log_iter`` takes linear time and memory about twice the line, at most four times (measured
in a separate process with ``ru_maxrss``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from torchx.specs import AppState
from torchx.testing import eventually, proc_status, python_app, run_python
from torchx_sched_local.local_scheduler import LocalScheduler

SIZE = 100 << 20
WRITE = (
    "import os, sys, time\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
    f"sys.stdout.buffer.write(b'x' * {SIZE} + b'\\n')\n"
    "sys.stdout.flush()\n"
    "print('after', file=sys.stderr, flush=True)\n"
    "while not os.path.exists(sys.argv[1] + '.end'): time.sleep(0.01)\n"
)
READ = """
import resource, sys, time
from torchx.schedulers.streams import Stream
from torchx_sched_local.local_scheduler import LocalScheduler
sched = LocalScheduler("t")
t = time.perf_counter()
lines = list(sched.log_iter(sys.argv[1], "r", 0, streams=Stream(sys.argv[2])))
elapsed = time.perf_counter() - t
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, len(lines), [len(x) for x in lines][:3])
"""


@pytest.mark.slow
def test_a_100mb_line(sched: LocalScheduler, tmp_path: Path) -> None:
    go = tmp_path / "go"
    app_id = sched.submit(python_app(WRITE, str(go), name="long"), {})
    eventually(lambda: ((sched.store.state(app_id) or {}).get("replicas") or [{}])[0].get("state") == "RUNNING")
    supervisor = (sched.store.state(app_id) or {})["pid"]
    job_dir = sched.store.job_dir(app_id)
    cmdline = Path(f"/proc/{supervisor}/cmdline")
    eventually(lambda: cmdline.read_bytes().endswith(job_dir.encode() + b"\0"), timeout=10)
    go.touch()
    replica_dir = os.path.join(job_dir, "logs", "r", "0")
    eventually(lambda: os.path.exists(os.path.join(replica_dir, "stderr.log")), timeout=60)
    peak = proc_status(supervisor, "VmHWM")
    assert peak < 32 << 20, f"supervisor peak RSS {peak / 2**20:.1f} MB while storing a 100 MB line"
    Path(str(go) + ".end").touch()
    desc = sched.wait(app_id, timeout=60)
    assert desc is not None, desc.msg
    assert desc.state == AppState.SUCCEEDED, desc.msg
    # each byte once: the two logs hold exactly the output; the rest is small indexes
    sizes = {name: os.path.getsize(os.path.join(replica_dir, name)) for name in os.listdir(replica_dir)}
    assert sizes["stdout.log"] == SIZE + 1
    assert sizes["stderr.log"] == len("after\n")
    assert sum(sizes.values()) < SIZE + 4096, sizes
    for stream, expected in (("stdout", [SIZE + 1]), ("combined", [SIZE + 1, 6])):
        proc = run_python(READ, app_id, stream, timeout=300)
        assert proc.returncode == 0, proc.stderr
        elapsed, maxrss, count, lengths = proc.stdout.split(maxsplit=3)
        assert eval(lengths) == expected
        assert int(count) == len(expected)
        assert float(elapsed) < 30, f"{stream}: {float(elapsed):.1f} s to read a 100 MB line"
        # one str of the line (100 MB) + its pieces while reading (100 MB) + the interpreter:
        # ~210 MB alone and in this package's run; in some whole-tree runs (nox -s e2e) the same
        # reader peaks at 373-387 MB, reproduced only there and not explained (the bound is the
        # linear one, 4x the line: a copy per line or per piece would be far above it)
        assert int(maxrss) < 4 * SIZE + (80 << 20), f"{stream}: reader peak RSS {int(maxrss) >> 20} MB"
