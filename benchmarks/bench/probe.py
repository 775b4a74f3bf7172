"""In-process timing script, run by the harness inside a benchmark venv (ours or upstream).

It uses only the Python standard library and the public torchx API that ours and
upstream TorchX share (``get_runner``, ``AppDef``, ``Role``, ``Resource``),
and writes its measurements as JSON to ``--out`` (stdout is left to whatever the
scheduler prints). Times are in seconds.

    python probe.py --out r.json dryrun --scheduler local_cwd --replicas 1000 --iters 10
    python probe.py --out r.json run --replicas 32 --iters 5
    python probe.py --out r.json logs --lines 1000000 --iters 3
    python probe.py --out r.json submit --count 250 --handles h0.txt
    python probe.py --out r.json list --handles h0.txt h1.txt
    python probe.py --out r.json remote-run --scheduler kubernetes --image IMG --cfg namespace=default
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from torchx.runner import get_runner
from torchx.specs import AppDef, Resource, Role

_LONG_LINE_AT = 500_000


def _app(name: str, entrypoint: str, args: list[str], replicas: int, image: str) -> AppDef:
    role = Role(
        name=name,
        image=image,
        entrypoint=entrypoint,
        args=args,
        num_replicas=replicas,
        resource=Resource(cpu=1, gpu=0, memMB=1024),
    )
    return AppDef(name=name, roles=[role])


def _cfg(pairs: list[str]) -> dict[str, str]:
    return dict(p.split("=", 1) for p in pairs)


def dryrun(a: argparse.Namespace) -> dict[str, Any]:
    """Times ``Runner.dryrun`` of a 1-role app with many replicas, and ``str()`` of the result."""
    app = _app("trainer", "python", ["-m", "train", "--lr", "0.1"], a.replicas, a.image or os.getcwd())
    cfg = _cfg(a.cfg)
    runner = get_runner()
    start = time.perf_counter()
    info = runner.dryrun(app, a.scheduler, cfg)
    first = time.perf_counter() - start
    start = time.perf_counter()
    text = str(info)
    first_str = time.perf_counter() - start
    samples, str_samples = [], []
    for _ in range(a.iters):
        start = time.perf_counter()
        info = runner.dryrun(app, a.scheduler, cfg)
        samples.append(time.perf_counter() - start)
        start = time.perf_counter()
        text = str(info)
        str_samples.append(time.perf_counter() - start)
    return {
        "first": first,
        "first_str": first_str,
        "samples": samples,
        "str_samples": str_samples,
        "str_chars": len(text),
        "str_head": text[:300],
    }


def _run_and_wait(runner: Any, app: AppDef, wait_interval: float) -> tuple[float, float, str]:
    """(run() call, run -> terminal, final state)."""
    start = time.perf_counter()
    handle = runner.run(app, "local_cwd")
    called = time.perf_counter() - start
    status = runner.wait(handle, wait_interval=wait_interval)
    return called, time.perf_counter() - start, status.state.name if status else "NONE"


def _bare_floor(replicas: int) -> float:
    """The floor: start ``replicas`` ``/bin/true`` processes and wait for them (Popen + wait)."""
    import subprocess

    start = time.perf_counter()
    procs = [subprocess.Popen(["/bin/true"]) for _ in range(replicas)]
    for p in procs:
        p.wait()
    return time.perf_counter() - start


def run(a: argparse.Namespace) -> dict[str, Any]:
    """Times ``Runner.run`` + ``Runner.wait`` until SUCCEEDED of ``/bin/true`` replicas, the
    ``run()`` call alone, and (alternating with them) the bare-process floor."""
    app = _app("true", "/bin/true", [], a.replicas, os.getcwd())
    with get_runner() as runner:
        _, first, state = _run_and_wait(runner, app, a.wait_interval)
        samples, calls, floor, states = [], [], [], [state]
        for _ in range(a.iters):
            floor.append(_bare_floor(a.replicas))
            called, seconds, state = _run_and_wait(runner, app, a.wait_interval)
            calls.append(called)
            samples.append(seconds)
            states.append(state)
    return {"first": first, "samples": samples, "calls": calls, "floor": floor, "states": states}


def _expected_lines(count: int, long_len: int) -> list[str]:
    lines = [f"line {i:07d} abcdefghij" for i in range(count)]
    lines[_LONG_LINE_AT % count] = "L" * (long_len - 1) + "!"
    return lines


def logs(a: argparse.Namespace) -> dict[str, Any]:
    """Times ``Runner.log_lines`` of a finished job that printed ``--lines`` lines, and checks them."""
    expected = _expected_lines(a.lines, a.long)
    path = os.path.join(os.getcwd(), f"bench-lines-{os.getpid()}.txt")
    with open(path, "w") as f:
        f.write("\n".join(expected) + "\n")
    try:
        with get_runner() as runner:
            handle = runner.run(_app("cat", "/bin/cat", [path], 1, os.getcwd()), "local_cwd")
            status = runner.wait(handle, wait_interval=0.05)
            state = status.state.name if status else "NONE"
            samples = []
            lines: list[str] = []
            for _ in range(a.iters):
                start = time.perf_counter()
                lines = list(runner.log_lines(handle, "cat", 0))
                samples.append(time.perf_counter() - start)
    finally:
        os.unlink(path)
    got = [ln[:-1] if ln.endswith("\n") else ln for ln in lines]
    long_got = got[_LONG_LINE_AT % a.lines] if len(got) > _LONG_LINE_AT % a.lines else ""
    problem = ""
    if got != expected:
        bad = next(
            (i for i, (x, y) in enumerate(zip(got, expected, strict=False)) if x != y), min(len(got), len(expected))
        )
        problem = f"got {len(got)} lines, expected {len(expected)}; first difference at line {bad}"
    return {
        "state": state,
        "samples": samples,
        "count": len(got),
        "expected": len(expected),
        "intact": not problem,
        "long_line_ok": long_got == expected[_LONG_LINE_AT % a.lines],
        "newline_terminated": all(ln.endswith("\n") for ln in lines),
        "problem": problem,
    }


def submit(a: argparse.Namespace) -> dict[str, Any]:
    """Submits ``--count`` ``/bin/true`` jobs without waiting; writes their handles to ``--handles``."""
    app = _app("true", "/bin/true", [], 1, os.getcwd())
    handles = []
    start = time.perf_counter()
    with get_runner() as runner:
        for _ in range(a.count):
            handles.append(runner.run(app, "local_cwd"))
    seconds = time.perf_counter() - start
    with open(a.handles[0], "w") as f:
        f.write("\n".join(handles) + "\n")
    return {"seconds": seconds, "count": len(handles)}


def list_apps(a: argparse.Namespace) -> dict[str, Any]:
    """Times ``Runner.list("local_cwd")`` (first call in a fresh process); checks no job is lost."""
    wanted: set[str] = set()
    for path in a.handles:
        with open(path) as f:
            wanted.update(line.strip().rsplit("/", 1)[-1] for line in f if line.strip())
    with get_runner() as runner:
        start = time.perf_counter()
        apps = runner.list("local_cwd")
        first = time.perf_counter() - start
        start = time.perf_counter()
        runner.list("local_cwd")
        second = time.perf_counter() - start
    ids = {app.app_id for app in apps}
    return {
        "first": first,
        "second": second,
        "count": len(apps),
        "unique": len(ids),
        "wanted": len(wanted),
        "missing": len(wanted - ids),
    }


def remote_run(a: argparse.Namespace) -> dict[str, Any]:
    """Times the first ``Runner.run`` in a fresh process on a remote scheduler (its client set-up
    and imports included), then ``--iters`` more; cancels every job it submitted."""
    app = _app("echo", "echo", ["hi"], 1, a.image)
    cfg = _cfg(a.cfg)
    handles = []
    with get_runner() as runner:
        try:
            start = time.perf_counter()
            handles.append(runner.run(app, a.scheduler, cfg))
            first = time.perf_counter() - start
            samples = []
            for _ in range(a.iters):
                start = time.perf_counter()
                handles.append(runner.run(app, a.scheduler, cfg))
                samples.append(time.perf_counter() - start)
        finally:
            for handle in handles:
                runner.cancel(handle)
    return {"first": first, "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="file to write the JSON result to")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("dryrun")
    p.add_argument("--scheduler", default="local_cwd")
    p.add_argument("--replicas", type=int, default=1000)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--image", default="")
    p.add_argument("--cfg", nargs="*", default=[], help="run options k=v")
    p = sub.add_parser("run")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--wait-interval", type=float, default=0.01)
    p = sub.add_parser("logs")
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--long", type=int, default=256 * 1024, help="length of the one long line")
    p.add_argument("--iters", type=int, default=3)
    p = sub.add_parser("submit")
    p.add_argument("--count", type=int, default=250)
    p.add_argument("--handles", nargs=1, required=True)
    p = sub.add_parser("list")
    p.add_argument("--handles", nargs="*", default=[])
    p = sub.add_parser("remote-run")
    p.add_argument("--scheduler", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--cfg", nargs="*", default=[], help="run options k=v")
    a = parser.parse_args()
    fn = {"dryrun": dryrun, "run": run, "logs": logs, "submit": submit, "list": list_apps, "remote-run": remote_run}[
        a.cmd
    ]
    result = fn(a)
    with open(a.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
