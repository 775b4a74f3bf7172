"""The floors under three targets of issue 22, measured on this machine.

Each line is a cost that no change to torchx's own code removes, set beside the target it
bounds:

* ``torchx runopts`` under 30 ms: the interpreter's start, and ``re`` (imported by the
  console script pip generates for every ``[project.scripts]`` entry, and by ``argparse``).
* ``Runner.run()`` under 3 ms: a ``fork`` of a process that imported torchx (how local_cwd
  starts a supervisor that outlives the launcher at once) and one ``fdatasync`` (the journal
  line that makes the job's record durable). The fork costs the launcher more after it
  returns: it write-protects the launcher's pages as well as the child's, so each page the
  launcher writes next (CPython writes reference counts all over its heap) is a page fault,
  even once the child has exited. The row "just after a fork" shows that tax on a dry run;
  ``subprocess.Popen`` (upstream's start) uses ``vfork`` and does not pay it.
* 1x32 run -> terminal within 1.3x of 32 ``Popen`` + ``wait``: 32 ``posix_spawn`` + ``waitpid``
  of ``/bin/true``, from one thread and from two (``posix_spawn`` holds the GIL, so a second
  thread gains nothing), and with a session of its own for each (``setsid``: what the
  supervisor does, so that a replica's whole process tree can be found and stopped; where the
  kernel groups sessions for its scheduler, ``kernel.sched_autogroup_enabled=1``, each new
  session is a new scheduling group, which costs more than the spawn itself here).

    python3 benchmarks/floors.py                  # uses .bench/ours (run.py builds it)
    python3 benchmarks/floors.py --python /path/to/venv/bin/python --repeat 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_IN_VENV = r"""
import os, statistics, sys, threading, time
repeat = int(sys.argv[1])
import torchx.runner, torchx_sched_local.local_scheduler, torchx_sched_local.supervisor

def fork_ms():
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        samples.append(time.perf_counter() - start)
        os.waitpid(pid, 0)
    return statistics.median(samples) * 1000

def fdatasync_ms(directory):
    fd = os.open(os.path.join(directory, "journal"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        os.write(fd, b"x" * 900 + b"\n")
        os.fdatasync(fd)
        samples.append(time.perf_counter() - start)
    os.close(fd)
    return statistics.median(samples) * 1000

def spawn_ms(threads, count=32, setsid=False):
    env = dict(os.environ)
    def spawn(n, pids):
        for _ in range(n):
            pids.append(os.posix_spawn("/bin/true", ["/bin/true"], env, setsid=setsid))
    samples = []
    for _ in range(max(5, repeat // 3)):
        pids = []
        start = time.perf_counter()
        workers = [threading.Thread(target=spawn, args=(count // threads, pids)) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        for pid in pids:
            os.waitpid(pid, 0)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000

def popen_ms(count=32):
    import subprocess
    samples = []
    for _ in range(max(5, repeat // 3)):
        start = time.perf_counter()
        procs = [subprocess.Popen(["/bin/true"]) for _ in range(count)]
        for p in procs:
            p.wait()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000

def after_fork_ms():
    # a fork write-protects the parent's pages too: every page the parent writes next (Python
    # writes reference counts everywhere) is a fault, even once the child is gone
    import resource
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Resource, Role

    runner = get_runner()
    role = Role(name="r", image=os.getcwd(), entrypoint="/bin/true", resource=Resource(cpu=1, gpu=0, memMB=128))
    app = AppDef(name="t", roles=[role])
    faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    plain, forked, plain_faults, forked_faults = [], [], [], []
    for _ in range(repeat):
        runner.dryrun(app, "local_cwd")
        before, start = faults(), time.perf_counter()
        runner.dryrun(app, "local_cwd")
        plain.append(time.perf_counter() - start)
        plain_faults.append(faults() - before)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        before, start = faults(), time.perf_counter()
        runner.dryrun(app, "local_cwd")
        forked.append(time.perf_counter() - start)
        forked_faults.append(faults() - before)
    median = statistics.median
    return median(plain) * 1000, median(forked) * 1000, median(plain_faults), median(forked_faults)

print(f"fork {fork_ms():.3f}")
print("dryrun {:.3f} {:.3f} {:.0f} {:.0f}".format(*after_fork_ms()))
print(f"fdatasync {fdatasync_ms(sys.argv[2]):.3f}")
print(f"spawn1 {spawn_ms(1):.3f}")
print(f"spawn2 {spawn_ms(2):.3f}")
print(f"spawn1setsid {spawn_ms(1, setsid=True):.3f}")
print(f"popen {popen_ms():.3f}")
"""


def _process_ms(argv: list[str], repeat: int) -> float:
    samples = []
    for i in range(repeat + 2):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if i >= 2:  # two warm-ups
            samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = Path(__file__).resolve().parent.parent
    parser.add_argument("--python", default=str(here / ".bench" / "ours" / "bin" / "python"), help="a venv's python")
    parser.add_argument("--repeat", type=int, default=20)
    a = parser.parse_args()
    if not os.path.exists(a.python):
        sys.exit(f"floors: {a.python} does not exist; run `python3 benchmarks/run.py --scenarios 14` first")
    py = a.python
    torchx = os.path.join(os.path.dirname(py), "torchx")
    start = _process_ms([py, "-c", "pass"], a.repeat)
    with_re = _process_ms([py, "-c", "import re"], a.repeat)
    with_argparse = _process_ms([py, "-c", "import argparse"], a.repeat)
    runopts = _process_ms([torchx, "runopts"], a.repeat)
    print("torchx runopts (target < 30 ms)")
    print(f"  python -c pass                         {start:7.2f} ms")
    print(f"  python -c 'import re'                  {with_re:7.2f} ms   (pip's console script does this first)")
    print(f"  python -c 'import argparse'            {with_argparse:7.2f} ms")
    print(f"  torchx runopts                         {runopts:7.2f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([py, "-c", _IN_VENV, str(a.repeat), tmp], capture_output=True, text=True, check=True)
    got = dict(line.split(maxsplit=1) for line in out.stdout.splitlines())
    plain, forked, plain_faults, forked_faults = got["dryrun"].split()
    print("Runner.run() of a 1x1 local_cwd app (target < 3 ms)")
    print(f"  fork of a process that imported torchx {float(got['fork']):7.3f} ms")
    print(f"  fdatasync of a journal line            {float(got['fdatasync']):7.3f} ms")
    print(f"  dryrun of 1x1                          {float(plain):7.3f} ms   (page faults: {plain_faults})")
    print(f"  the same just after a fork             {float(forked):7.3f} ms   (page faults: {forked_faults})")
    print("1x32 run -> terminal (target <= 1.3x the Popen floor)")
    print(f"  32 Popen + wait (the floor)            {float(got['popen']):7.2f} ms")
    print(f"  32 posix_spawn + waitpid, one thread   {float(got['spawn1']):7.2f} ms")
    print(f"  32 posix_spawn + waitpid, two threads  {float(got['spawn2']):7.2f} ms")
    print(f"  the same in sessions of their own      {float(got['spawn1setsid']):7.2f} ms   (what the supervisor does)")
    print(f"  1.3x the floor leaves                  {0.3 * float(got['popen']):7.2f} ms for everything but the spawns")


if __name__ == "__main__":
    main()
