"""Builds the ``bsub`` request of an app: the options and the job script (pure: no LSF calls).

Shape: one LSF job per app with one slot per replica (or the ``slots`` option). The script
runs on the first execution host; it starts every replica in the background (roles in
order, replicas in order) on the host of its slot, directly when that is this host, else
with ``blaunch -z HOST`` (``lsrun -m HOST`` where there is no ``blaunch``, as on OpenLava).
Each replica runs under ``run_split`` (:data:`torchx.schedulers.shell.RUN_SPLIT`): its
stdout goes to ``lsf-<job>-<role>-<k>.out``, its stderr to ``.err`` and both, in the order
they arrive, to ``.log``; its exit code goes to ``.exit`` when it ends by itself. The script waits for all of them; the first
that fails stops the others and its exit code is the job's. With ``max_retries`` the
whole set is started again, up to that many times, in the same allocation.

Every value reaches the process unchanged: the ``bsub`` options are passed as argv (never
through a shell or ``#BSUB`` lines); each replica's argv is a bash array of quoted words.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass

from torchx.schedulers.shell import RUN_SPLIT, argv_renderer, placeholder, shell_word, wait_for_replicas
from torchx.specs.macros import RANK0_ENV
from torchx.specs.roles import AppDef

from torchx_sched_lsf.opts import LsfOpts

_JOB_ID = placeholder("app_id")
_EXPANSIONS = {_JOB_ID: '"$LSB_JOBID"'}
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_NAME_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def log_file(app_id: str, role: str, replica_id: int, ext: str) -> str:
    """A replica's output file, relative to the job's directory (``ext``: out, err or log)."""
    return f"lsf-{app_id}-{_FILE_UNSAFE.sub('_', role)}-{replica_id}.{ext}"


def restarts_file(app_id: str) -> str:
    """The file (in the job's directory) where the script counts its restarts."""
    return f"lsf-{app_id}.restarts"


def _escape(text: str) -> str:
    """``text`` in job-name-safe characters: others (and ``~``) become ``~XX`` per UTF-8 byte.

    (Not ``%``: OpenLava's ``bjobs -UF`` mangles ``%`` in job names.)
    """
    return "".join(c if c in _NAME_SAFE else "".join(f"~{b:02X}" for b in c.encode()) for c in text)


def _unescape(text: str) -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "~" and i + 3 <= len(text) and all(c in "0123456789ABCDEF" for c in text[i + 1 : i + 3]):
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += text[i].encode()
            i += 1
    return out.decode("utf-8", errors="replace")


def job_name(app_name: str, roles: list[tuple[str, int]]) -> str:
    """The LSF job name of an app: ``<app>@<role>:<replicas>,...`` with every part escaped.

    The name carries the app's layout, so ``describe`` and ``list`` need nothing but ``bjobs``.
    """
    return _escape(app_name) + "@" + ",".join(f"{_escape(role)}:{n}" for role, n in roles)


def parse_job_name(name: str) -> tuple[str, list[tuple[str, int]]] | None:
    """(app name, [(role, replicas)]) from :func:`job_name`; None if it is not a torchx job's name."""
    app, sep, layout = name.partition("@")
    if not sep or not layout:
        return None
    roles: list[tuple[str, int]] = []
    for part in layout.split(","):
        role, colon, count = part.rpartition(":")
        if not colon or not role or not count.isdigit():
            return None
        roles.append((_unescape(role), int(count)))
    return _unescape(app), roles


@dataclass
class BsubRequest:
    """What ``bsub`` is given: its options, the script (on stdin) and the directory to submit from."""

    args: list[str]
    script: str
    workdir: str | None

    def command(self) -> list[str]:
        """The ``bsub`` command line (the script goes to its stdin)."""
        return ["bsub", *self.args]

    def __str__(self) -> str:
        head = f"# {shlex.join(self.command())} < script" + (f"  (in {self.workdir})" if self.workdir else "")
        return head + "\n" + self.script


def bsub_args(app: AppDef, opts: LsfOpts, replicas: int, gpu_flag: bool) -> list[str]:
    """The ``bsub`` options of ``app`` (the job name, output files, slots, run options, GPUs).

    Args:
        gpu_flag: the cluster has ``bsub -gpu`` (IBM LSF 10.1; OpenLava has not)

    Raises:
        ValueError: a role asks for GPUs and the cluster has no ``-gpu``
    """
    name = job_name(app.name, [(role.name, role.num_replicas) for role in app.roles])
    args = ["-J", name, "-o", "lsf-%J.out", "-e", "lsf-%J.err", "-n", str(opts.slot_count(replicas))]
    for flag, value in (("-q", opts.queue), ("-P", opts.project), ("-G", opts.user_group), ("-W", opts.time)):
        if value is not None:
            args += [flag, value]
    resource = opts.resource_string(replicas)
    if resource:
        args += ["-R", resource]
    gpus = max(role.resource.gpu for role in app.roles)
    if gpus > 0:
        if not gpu_flag:
            raise ValueError(
                f"the app asks for {gpus} GPU(s) per replica but this LSF cluster has no `bsub -gpu` (OpenLava);"
                " request GPUs through your cluster's resource instead (-cfg resource='rusage[...]')"
                " and set the roles' gpu to 0"
            )
        args += ["-gpu", f"num={gpus}"]
    return args


_PRELUDE = f"""\
set -o pipefail
# one entry per slot, from "hostA 2 hostB 1"; the script runs on the first host
hosts=()
set -- $LSB_MCPU_HOSTS
while [ $# -gt 1 ]; do
    for ((s = 0; s < $2; s++)); do hosts+=("$1"); done
    shift 2
done
[ ${{#hosts[@]}} -gt 0 ] || hosts=("$(hostname)")
# host of the first replica, named by the rank0_env macro
export {RANK0_ENV}="${{hosts[0]}}"
if command -v blaunch >/dev/null 2>&1; then launch=(blaunch -z); else launch=(lsrun -m); fi
# kill_tree PID...: SIGTERM to each PID and all its descendants (a replica's children, e.g.
# the workers of a launcher, would otherwise keep the job running)
kill_tree() {{
    local p f st kids
    for p in "$@"; do
        kids=()
        for f in /proc/[0-9]*/stat; do
            read -r st <"$f" 2>/dev/null || continue
            st=${{st##*) }}
            st=${{st#* }}
            if [ "${{st%% *}}" = "$p" ]; then f=${{f#/proc/}}; kids+=("${{f%/stat}}"); fi
        done
        kill -TERM "$p" 2>/dev/null
        if [ ${{#kids[@]}} -gt 0 ]; then kill_tree "${{kids[@]}}"; fi
    done
}}
# bkill sends SIGINT first, which background commands ignore: pass it on to the replicas
trap 'stopping=1; kill_tree $(jobs -p)' INT TERM
pids=()

# start_replica HOST LOG_BASE ARGV...: starts ARGV in the background (on HOST unless that is
# this host); stdout to LOG_BASE.out, stderr to LOG_BASE.err, both to LOG_BASE.log, and its
# exit code to LOG_BASE.exit once it ends by itself (a replica stopped by the script has none)
{RUN_SPLIT}
start_replica() {{
    local host=$1 base=$2
    shift 2
    if [ "$host" != "${{hosts[0]}}" ]; then set -- "${{launch[@]}}" "$host" "$@"; fi
    rm -f "$base.exit"
    {{ run_split "$base" "$@"; rc=$?; echo "$rc" >"$base.exit"; exit "$rc"; }} >>"$base.log" 2>&1 &
    pids+=($!)
}}
"""


def build_request(app: AppDef, opts: LsfOpts, gpu_flag: bool = True) -> BsubRequest:
    """The bsub request of ``app`` under ``opts`` (``gpu_flag``: see :func:`bsub_args`)."""
    workdir = os.path.abspath(opts.job_dir) if opts.job_dir else None
    replicas = sum(role.num_replicas for role in app.roles)
    per = opts.slot_count(replicas) // replicas
    retries = min(role.max_retries for role in app.roles)
    lines = [
        "#!/bin/bash",
        f"# torchx app {json.dumps(app.name, ensure_ascii=False)}: {replicas} replica(s) in one LSF job",
        _PRELUDE,
    ]
    starts: list[str] = []
    i = 0
    for role in app.roles:
        render = argv_renderer(role, _EXPANSIONS[_JOB_ID])
        base = log_file("$LSB_JOBID", role.name, 0, "")[: -len("0.")]  # the role part is made of safe characters
        for k in range(role.num_replicas):
            lines += [f"# {role.name}/{k}", f"replica_{i}=({render(k)})"]
            starts.append(f'start_replica "${{hosts[{i * per}]}}" "{base}{k}" "${{replica_{i}[@]}}"')
            i += 1
    run = [*starts, *wait_for_replicas("kill_tree $(jobs -p)")]
    lines.append("")
    if retries > 0:
        restarts = shell_word(restarts_file(_JOB_ID), _EXPANSIONS)
        lines += [
            "attempt=0",
            "while :; do",
            *("    " + line for line in run),
            f'    if [ "$rc" -eq 0 ] || [ -n "${{stopping:-}}" ] || [ "$attempt" -ge {retries} ]; then break; fi',
            "    attempt=$((attempt + 1))",
            f'    echo "$attempt" >{restarts}',
            '    echo "torchx: attempt $attempt failed with exit code $rc; starting again" >&2',
            "done",
        ]
    else:
        lines += run
    lines += ["", 'exit "$rc"']
    args = bsub_args(app, opts, replicas, gpu_flag)
    return BsubRequest(args=args, script="\n".join(lines) + "\n", workdir=workdir)
