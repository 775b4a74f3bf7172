"""Measures a controller job (``controller=<scheduler>``) driving many managed jobs, and the
in-job restart of a job that recovers inside Slurm.

    python benchmarks/managed/bench_controller.py [--jobs 100] [--seconds 20] [--journal s3://BUCKET/PREFIX] [--slurm]

* controller: ``--jobs`` managed jobs (``sleep SECONDS`` on local_cwd) share one journal and
  one controller, itself a local_cwd job (``controller=local_cwd``): the controller's peak
  VmRSS and thread count while it drives all of them, and the time until every job read
  SUCCEEDED. Targets: at most 60 MB RSS, at least 100 jobs driven by one process. ``--journal
  s3://BUCKET/PREFIX`` keeps the journal in that bucket (a fresh prefix under it; the ``AWS_*``
  environment names the endpoint and credentials, e.g. ``. /tmp/torchx-services/env.sh`` for
  moto) instead of a temporary directory; it also times one append and one lease renewal there.
* ``--slurm`` (needs the live cluster of scripts/backends): a native Slurm job whose attempt
  0 exits 1 (max_restarts=1): the gap between attempt 0's end and attempt 1's start in its
  attempt log (ours: the batch script's loop). Target: at most 1 s of ours.

Every run uses fresh state directories under a temporary directory (removed afterwards).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _controller_pid(journal: str) -> int | None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"torchx_managed.controller" in cmd and journal.encode() in cmd:
            return int(pid)
    return None


def _status_field(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def url_latency(url: str, rounds: int = 20) -> dict[str, Any]:
    """Median milliseconds of one append (one event, journal already read) and one lease
    renewal (a conditional replace) on a URL journal."""
    import statistics
    import uuid

    from torchx_managed.journal_store import ObjectLease, UrlStore

    store = UrlStore(f"{url}/latency-{uuid.uuid4().hex[:8]}")
    store.create("j", {"bench": True})
    appends, renewals = [], []
    try:
        for i in range(rounds):
            t = time.perf_counter()
            store.append("j", {"i": i})
            appends.append(time.perf_counter() - t)
        lease = ObjectLease(store.objects, f"{store.root}/j/driver.lease", "bench")
        assert lease.try_acquire()
        for _ in range(rounds):
            t = time.perf_counter()
            assert lease.try_acquire()  # the holder's renewal: one read, one If-Match write
            renewals.append(time.perf_counter() - t)
        lease.release()
    finally:
        store.remove("j")
    return {
        "append_ms": round(statistics.median(appends) * 1000, 1),
        "renewal_ms": round(statistics.median(renewals) * 1000, 1),
    }


def controller(jobs: int, seconds: float, url: str | None = None) -> dict[str, Any]:
    """Runs ``jobs`` managed jobs under one local_cwd controller (their journal under ``url``, or
    in a temporary directory); returns its peak RSS and threads."""
    import uuid

    from torchx.runner import get_runner
    from torchx.specs import AppDef, AppState, Resource, Role

    tmp = tempfile.mkdtemp(prefix="torchx-bench-controller-")
    os.environ["TORCHX_LOCAL_STATE_DIR"] = os.path.join(tmp, "local")
    os.environ["TORCHX_MANAGED_STATE_DIR"] = os.path.join(tmp, "managed")
    journal = f"{url.rstrip('/')}/bench-{uuid.uuid4().hex[:8]}" if url else os.path.join(tmp, "journal")
    role = Role("s", image=tmp, entrypoint="sleep", args=[str(seconds)], resource=Resource(1, 0, 64))
    cfg = {"targets": ["local_cwd"], "controller": "local_cwd", "journal": journal}
    peak_rss = peak_threads = 0
    began = time.monotonic()
    try:
        with get_runner("bench") as runner:
            handles = [runner.run(AppDef(f"job{i}", [role]), "managed", cfg) for i in range(jobs)]
            submitted = time.monotonic() - began
            left = set(handles)
            while left:
                pid = _controller_pid(journal)
                if pid is not None:
                    try:
                        peak_rss = max(peak_rss, _status_field(pid, "VmRSS"))
                        peak_threads = max(peak_threads, _status_field(pid, "Threads"))
                    except (OSError, ValueError):
                        pass
                for handle in list(left)[:10]:
                    status = runner.status(handle)
                    if status is not None and status.state == AppState.SUCCEEDED:
                        left.discard(handle)
                    elif status is not None and status.state in (AppState.FAILED, AppState.CANCELLED):
                        raise SystemExit(f"{handle} ended {status.state.name}: {status.msg}")
                time.sleep(0.2)
            done = time.monotonic() - began
            for pid in filter(None, [_controller_pid(journal)]):
                os.kill(pid, 15)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "jobs": jobs,
        "submitted_s": round(submitted, 1),
        "all_succeeded_s": round(done, 1),
        "controller_peak_rss_mb": round(peak_rss / 1024, 1),
        "controller_peak_threads": peak_threads,
    }


def slurm_restart_gap() -> dict[str, Any]:
    """Seconds between attempt 0's end and attempt 1's start of a native Slurm job."""
    from torchx.schedulers.recovery import read_attempt_log

    shared = tempfile.mkdtemp(prefix="torchx-bench-native-")
    os.chmod(shared, 0o755)
    try:
        cfg = f"targets=slurm,max_restarts=1,job_dir={shared}"
        cmd = [sys.executable, "-m", "torchx", "run", "--detach", "--workspace", "", "-s", "managed", "-cfg", cfg]
        out = subprocess.run(
            [*cmd, "utils.sh", "sh", "-c", '[ "$TORCHX_ATTEMPT" = 1 ]'], capture_output=True, text=True, check=True
        )
        job = out.stdout.strip().splitlines()[-1].rsplit(":", 1)[1]
        path = Path(shared) / f"slurm-{job}.attempts"
        deadline = time.monotonic() + 120
        while "final" not in (path.read_text() if path.exists() else ""):
            if time.monotonic() > deadline:
                raise SystemExit(f"slurm job {job} did not finish")
            time.sleep(0.2)
        log = read_attempt_log(path.read_text())
        first, second = log.attempts[0], log.attempts[1]
        assert first.ended is not None and second.started is not None
        return {"slurm_restart_gap_s": round(second.started - first.ended, 3)}
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--journal", help="an s3://BUCKET/PREFIX to keep the journal in (default: a temporary directory)"
    )
    parser.add_argument("--slurm", action="store_true", help="also measure a native Slurm job's restart")
    args = parser.parse_args()
    print(controller(args.jobs, args.seconds, args.journal))
    if args.journal:
        print(url_latency(args.journal))
    if args.slurm:
        print(slurm_restart_gap())


if __name__ == "__main__":
    main()
