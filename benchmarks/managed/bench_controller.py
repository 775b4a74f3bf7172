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


def _drop_succeeded(runner: Any, left: set[str]) -> None:
    """Removes from ``left`` (up to 10 of) the handles that read SUCCEEDED; a job that ended
    otherwise ends the benchmark."""
    from torchx.specs import AppState

    for handle in list(left)[:10]:
        status = runner.status(handle)
        if status is not None and status.state == AppState.SUCCEEDED:
            left.discard(handle)
        elif status is not None and status.state in (AppState.FAILED, AppState.CANCELLED):
            raise SystemExit(f"{handle} ended {status.state.name}: {status.msg}")


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
    from torchx.specs import AppDef, Resource, Role

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
                _drop_succeeded(runner, left)
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


def _kubectl(*args: str, check: bool = True) -> str:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, check=check).stdout


def _busy_cpu_seconds() -> float:
    """CPU seconds this machine spent busy since boot (every process, every core)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def k8s_controller(jobs: int, seconds: float, url: str | None = None, after: float = 60.0) -> dict[str, Any]:
    """Runs ``jobs`` managed jobs (``sleep SECONDS`` pods on ``kubernetes``, no resource requests)
    under one ``controller=kubernetes`` Deployment in a fresh namespace, their journal on a
    host directory the controller's pod mounts (or under ``url``); returns the peak RSS and
    threads of the controller's process (found in this machine's /proc: the kubelet's containers
    run here; its VmHWM read until the process ends or ``after`` seconds after every job
    succeeded), the most attempt pods running at once, and the machine's busy CPU seconds. The
    namespace (Deployment, Jobs, pods, Secret, Lease) is deleted afterwards."""
    import uuid

    from torchx.runner import get_runner
    from torchx.specs import AppDef, Resource, Role

    if not os.environ.get("KUBECONFIG"):
        raise SystemExit("export KUBECONFIG (e.g. . /tmp/torchx-services/env.sh; export KUBECONFIG)")
    image = os.environ.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm")
    tmp = tempfile.mkdtemp(prefix="torchx-bench-k8s-controller-")
    os.chmod(tmp, 0o777)  # the journal's directory, mounted into the controller's pod
    os.environ["TORCHX_LOCAL_STATE_DIR"] = os.path.join(tmp, "local")
    os.environ["TORCHX_MANAGED_STATE_DIR"] = os.path.join(tmp, "managed")
    journal = f"{url.rstrip('/')}/bench-{uuid.uuid4().hex[:8]}" if url else os.path.join(tmp, "journal")
    namespace = f"torchx-bench-{uuid.uuid4().hex[:8]}"
    repo = Path(__file__).resolve().parents[2]
    mounts = [sys.prefix, os.path.realpath(sys.base_prefix), str(repo), *([] if url else [tmp])]
    # no cpu/memMB: the pods request nothing (BestEffort), the smallest the scheduler makes
    role = Role("s", image=image, entrypoint="sleep", args=[str(seconds)], resource=Resource(-1, 0, -1))
    cfg: dict[str, Any] = {
        "targets": ["kubernetes"],
        "namespace": namespace,
        "mode": "jobs",
        "image_pull_policy": "IfNotPresent",
        "termination_grace_period": 1,
        "controller": "kubernetes",
        "journal": journal,
        "controller_image": image,
        "controller_python": sys.executable,
        "controller_mounts": mounts,
    }
    peak_rss = peak_hwm = peak_threads = peak_running = 0
    _kubectl("create", "namespace", namespace)
    busy = _busy_cpu_seconds()
    began = time.monotonic()
    try:
        with get_runner("bench") as runner:
            handles = [runner.run(AppDef(f"job{i}", [role]), "managed", cfg) for i in range(jobs)]
            submitted = time.monotonic() - began
            left, counted = set(handles), 0.0
            while left:
                if time.monotonic() > began + 1800:
                    raise SystemExit(f"{len(left)} jobs did not succeed in 30 minutes")
                pid = _controller_pid(journal)
                if pid is not None:
                    try:
                        peak_rss = max(peak_rss, _status_field(pid, "VmRSS"))
                        peak_hwm = max(peak_hwm, _status_field(pid, "VmHWM"))
                        peak_threads = max(peak_threads, _status_field(pid, "Threads"))
                    except (OSError, ValueError):
                        pass
                if time.monotonic() > counted + 3:
                    counted = time.monotonic()
                    running = _kubectl(
                        "get", "pods", "-n", namespace, "--field-selector=status.phase=Running", "-o", "name"
                    ).split()
                    peak_running = max(peak_running, len([p for p in running if "torchx-controller-" not in p]))
                _drop_succeeded(runner, left)
                time.sleep(0.2)
            done = time.monotonic() - began
            busy = _busy_cpu_seconds() - busy
            # the peak of its whole life: it goes on (lets go of the jobs' leases, idles) until it
            # scales itself to 0 or ``after`` seconds are up (VmHWM keeps what happened meanwhile)
            until = time.monotonic() + after
            while time.monotonic() < until and (pid := _controller_pid(journal)) is not None:
                try:
                    peak_hwm = max(peak_hwm, _status_field(pid, "VmHWM"))
                except (OSError, ValueError):
                    break
                time.sleep(0.5)
    finally:
        _kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=600s", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "controller": "kubernetes",
        "jobs": jobs,
        "sleep_s": seconds,
        "submitted_s": round(submitted, 1),
        "all_succeeded_s": round(done, 1),
        "peak_attempt_pods_running": peak_running,
        "machine_busy_cpu_s": round(busy, 1),
        "controller_peak_rss_mb": round(peak_rss / 1024, 1),
        "controller_vmhwm_mb": round(peak_hwm / 1024, 1),
        "vmhwm_read_until_s_after": after,
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
    parser.add_argument(
        "--controller",
        choices=["local_cwd", "kubernetes"],
        default="local_cwd",
        help="where the controller and the jobs run (kubernetes: needs KUBECONFIG and the live cluster's kubelet here)",
    )
    parser.add_argument(
        "--after",
        type=float,
        default=60.0,
        help="--controller kubernetes: seconds the controller's peak is still read once every job succeeded",
    )
    parser.add_argument("--slurm", action="store_true", help="also measure a native Slurm job's restart")
    args = parser.parse_args()
    if args.controller == "kubernetes":
        print(k8s_controller(args.jobs, args.seconds, args.journal, args.after))
    else:
        print(controller(args.jobs, args.seconds, args.journal))
    if args.journal:
        print(url_latency(args.journal))
    if args.slurm:
        print(slurm_restart_gap())


if __name__ == "__main__":
    main()
