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
from collections.abc import Sequence
from dataclasses import dataclass

from torchx.schedulers.recovery import RecoveryPolicy, restart_loop
from torchx.schedulers.shell import RUN_SPLIT, argv_renderer, placeholder, wait_for_replicas
from torchx.specs.macros import RANK0_ENV
from torchx.specs.roles import AppDef

from torchx_sched_lsf.opts import LsfOpts

_JOB_ID = placeholder("app_id")
_EXPANSIONS = {_JOB_ID: '"$LSB_JOBID"'}
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_NAME_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
#: kept as they are in an array's name parts (``.`` separates the parts, ``_`` escapes)
_ARRAY_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_ARRAY_MARK = "tx."
_ELEMENT_SUFFIX = re.compile(r"\[\d+\]$")
_ELEMENT_ID = re.compile(r"(\d+)\[(\d+)\]")
#: LSF's limit on the length of a job array's ``-J`` spec (name and index list)
MAX_ARRAY_SPEC = 255
#: shell text of a job array element's id, ``<job id>[<index>]`` (the app_id macro)
ELEMENT_ID_TEXT = '"${LSB_JOBID}[${LSB_JOBINDEX}]"'


def file_key(app_id: str) -> str:
    """The part of file names that stands for a job: its id, or ``<job>_<index>`` for an array
    element ``<job>[<index>]`` (no glob characters in file names)."""
    m = _ELEMENT_ID.fullmatch(app_id)
    return f"{m.group(1)}_{m.group(2)}" if m else app_id


def log_file(app_id: str, role: str, replica_id: int, ext: str) -> str:
    """A replica's output file, relative to the job's directory (``ext``: out, err or log)."""
    return f"lsf-{file_key(app_id)}-{_FILE_UNSAFE.sub('_', role)}-{replica_id}.{ext}"


def restarts_file(app_id: str) -> str:
    """The file (in the job's directory) where the script counts its restarts."""
    return f"lsf-{file_key(app_id)}.restarts"


def attempt_log(app_id: str) -> str:
    """The attempt log of a job that recovers in LSF, relative to the job's directory."""
    return f"lsf-{file_key(app_id)}.attempts"


def _escape(text: str, safe: frozenset[str] = _NAME_SAFE, mark: str = "~") -> str:
    """``text`` in job-name-safe characters: others (and ``mark``) become ``<mark>XX`` per UTF-8 byte.

    (Not ``%``: OpenLava's ``bjobs -UF`` mangles ``%`` in job names.)
    """
    return "".join(c if c in safe and c != mark else "".join(f"{mark}{b:02X}" for b in c.encode()) for c in text)


def _unescape(text: str, mark: str = "~") -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == mark and i + 3 <= len(text) and all(c in "0123456789ABCDEF" for c in text[i + 1 : i + 3]):
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


def array_job_name(app_name: str, roles: list[tuple[str, int]], room: int = MAX_ARRAY_SPEC) -> str:
    """The name of a job array: ``tx.<app>.<role>-<replicas>...`` in the characters IBM LSF
    documents for array names (letters, digits, ``.``, ``-``, ``_``): others, and ``.`` and
    ``_`` inside a part, become ``_XX`` per UTF-8 byte. The app part is cut to fit ``room``
    characters (LSF: the whole ``-J`` spec has at most 255)."""
    layout = "".join(f".{_escape(role, _ARRAY_SAFE, '_')}-{n}" for role, n in roles)
    app = _escape(app_name, _ARRAY_SAFE, "_")[: max(0, room - len(_ARRAY_MARK) - len(layout))]
    if "_" in app[-2:]:  # do not leave a cut escape behind
        app = app[: app.rindex("_")]
    return _ARRAY_MARK + app + layout


def parse_job_name(name: str) -> tuple[str, list[tuple[str, int]]] | None:
    """(app name, [(role, replicas)]) from :func:`job_name` or :func:`array_job_name` (an array
    element's name ends in ``[index]``, which is dropped); None if it is not a torchx job's name."""
    name = _ELEMENT_SUFFIX.sub("", name)
    if name.startswith(_ARRAY_MARK) and "@" not in name:
        app, *parts = name[len(_ARRAY_MARK) :].split(".")
        pairs = [part.rpartition("-") for part in parts]
        if not pairs or any(not role or not sep or not count.isdigit() for role, sep, count in pairs):
            return None
        return _unescape(app, "_"), [(_unescape(role, "_"), int(count)) for role, _, count in pairs]
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
    #: the job recovers in LSF (:func:`build_request` with a policy): its attempt log is made at submit
    recovering: bool = False

    def command(self) -> list[str]:
        """The ``bsub`` command line (the script goes to its stdin)."""
        return ["bsub", *self.args]

    def __str__(self) -> str:
        head = f"# {shlex.join(self.command())} < script" + (f"  (in {self.workdir})" if self.workdir else "")
        return head + "\n" + self.script


def bsub_args(
    app: AppDef, opts: LsfOpts, replicas: int, gpu_flag: bool, name: str | None = None, files: str = "%J"
) -> list[str]:
    """The ``bsub`` options of ``app`` (the job name, output files, slots, run options, GPUs).

    Args:
        gpu_flag: the cluster has ``bsub -gpu`` (IBM LSF 10.1; OpenLava has not)
        name: the ``-J`` value (default: :func:`job_name` of the app)
        files: what names the job in its output files (``%J``; an array's elements: ``%J_%I``)

    Raises:
        ValueError: a role asks for GPUs and the cluster has no ``-gpu``
    """
    if name is None:
        name = job_name(app.name, [(role.name, role.num_replicas) for role in app.roles])
    args = ["-J", name, "-o", f"lsf-{files}.out", "-e", f"lsf-{files}.err", "-n", str(opts.slot_count(replicas))]
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
# stop_replicas PGID...: SIGTERM to each replica's process group (every replica starts in a
# group of its own, set -m below, so its children, e.g. the workers of a launcher, go with it)
stop_replicas() {{
    local p
    for p in "$@"; do kill -TERM -- "-$p" 2>/dev/null; done
}}
# bkill sends SIGINT first, which the replicas (in their own groups) do not get: pass it on
trap 'stopping=1; stop_replicas "${{pids[@]}}"' INT TERM
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
    set -m
    {{ run_split "$base" "$@"; rc=$?; echo "$rc" >"$base.exit"; exit "$rc"; }} >>"$base.log" 2>&1 &
    pids+=($!)
    set +m
}}
"""


def _replica_lines(app: AppDef, app_id: str) -> list[str]:
    """``replica_<i>=(argv words)`` for every replica of ``app`` (roles in order, replicas in
    order); ``app_id``: the shell text the app_id macro becomes."""
    lines: list[str] = []
    i = 0
    for role in app.roles:
        render = argv_renderer(role, app_id)
        for k in range(role.num_replicas):
            lines += [f"# {role.name}/{k}", f"replica_{i}=({render(k)})"]
            i += 1
    return lines


def _run_lines(app: AppDef, per: int, key: str) -> list[str]:
    """Starts every replica (``replica_<i>`` arrays) on the host of its slot, waits, retries;
    ``key``: the shell text that names the job in its file names (:func:`file_key`)."""
    starts: list[str] = []
    i = 0
    for role in app.roles:
        base = log_file(key, role.name, 0, "")[: -len("0.")]  # the role part is made of safe characters
        for k in range(role.num_replicas):
            starts.append(f'start_replica "${{hosts[{i * per}]}}" "{base}{k}" "${{replica_{i}[@]}}"')
            i += 1
    run = [*starts, *wait_for_replicas('stop_replicas "${pids[@]}"')]
    retries = min(role.max_retries for role in app.roles)
    if retries <= 0:
        return ["", *run, "", 'exit "$rc"']
    return [
        "",
        "attempt=0",
        "while :; do",
        *("    " + line for line in run),
        f'    if [ "$rc" -eq 0 ] || [ -n "${{stopping:-}}" ] || [ "$attempt" -ge {retries} ]; then break; fi',
        "    attempt=$((attempt + 1))",
        f'    echo "$attempt" >"{restarts_file(key)}"',
        '    echo "torchx: attempt $attempt failed with exit code $rc; starting again" >&2',
        "done",
        "",
        'exit "$rc"',
    ]


def _replicas(app: AppDef) -> int:
    return sum(role.num_replicas for role in app.roles)


#: bash -c text that runs a replica's argv on its host and writes its exit code to the file
#: named by ``$0`` there: a replica whose host is lost leaves no such file
_REPORT = '"$@"; r=$?; echo "$r" >"$0"; exit "$r"'


def _attempt_lines(app: AppDef, per: int) -> list[str]:
    """One attempt of a job that recovers in LSF: every replica started on the host of its
    slot under a wrapper that writes its exit code on that host (``<log base>.rc``), the wait,
    then ``$rc`` and ``tx_lost=1`` when no replica failed by itself but one never reported its
    end (its host was lost). A stop (``bkill``: SIGINT, then SIGTERM) ends the loop too."""
    bases: list[str] = []
    for role in app.roles:
        base = log_file("$LSB_JOBID", role.name, 0, "")[: -len("0.")]  # the role part is made of safe characters
        bases += [f"{base}{k}" for k in range(role.num_replicas)]
    lines = [
        "trap 'stopping=1; tx_stop=1; stop_replicas \"${pids[@]}\"' INT TERM",
        'if [ -n "${stopping:-}" ]; then exit 1; fi',
        "rm -f -- " + " ".join(f'"{base}.rc"' for base in bases),
    ]
    for i, base in enumerate(bases):
        lines.append(
            f'start_replica "${{hosts[{i * per}]}}" "{base}" bash -c "$tx_report" "$PWD/{base}.rc" "${{replica_{i}[@]}}"'
        )
    lines += [
        *wait_for_replicas('stop_replicas "${pids[@]}"'),
        "tx_lost=0 tx_failed=0 tx_missing=0",
        "for f in " + " ".join(f'"{base}.rc"' for base in bases) + "; do",
        '    if [ ! -s "$f" ]; then tx_missing=1; elif [ "$(<"$f")" != 0 ]; then tx_failed=1; fi',
        "done",
        '[ "$tx_missing" = 1 ] && [ "$tx_failed" = 0 ] && tx_lost=1',
    ]
    return lines


def _recovery_lines(app: AppDef, per: int, policy: RecoveryPolicy) -> list[str]:
    """The attempts of a job that recovers in LSF (:func:`torchx.schedulers.recovery.restart_loop`),
    logged to :func:`attempt_log`. LSF gives a rerun job no count of its reruns: the batch
    shell counts its own starts in ``lsf-<job>.runs``. A job whose log already records its end
    (an admin's ``brequeue`` of a finished job) starts nothing new."""
    log = f'"{attempt_log("${LSB_JOBID}")}"'
    return [
        "",
        f"tx_report={shlex.quote(_REPORT)}",
        'echo "$(date +%s)" >>"lsf-${LSB_JOBID}.runs"',
        'tx_runs=$(($(wc -l <"lsf-${LSB_JOBID}.runs") - 1))',
        f"if grep -q '^final SUCCEEDED ' {log} 2>/dev/null; then exit 0; fi",
        f"if grep -q '^final ' {log} 2>/dev/null; then exit 1; fi",
        *restart_loop(
            policy,
            _attempt_lines(app, per),
            log_path=log,
            requeue_count="$tx_runs",
            default_checkpoint_dir='"$PWD/lsf-${LSB_JOBID}.checkpoints"',
        ),
    ]


def build_request(
    app: AppDef, opts: LsfOpts, gpu_flag: bool = True, policy: RecoveryPolicy | None = None
) -> BsubRequest:
    """The bsub request of ``app`` under ``opts`` (``gpu_flag``: see :func:`bsub_args`); with
    ``policy``, a job that recovers in LSF: ``bsub -r`` (LSF reruns it when its host fails)
    and the in-job attempts of :func:`_recovery_lines` (the roles' ``max_retries`` give way to
    the policy)."""
    workdir = os.path.abspath(opts.job_dir) if opts.job_dir else None
    replicas = _replicas(app)
    per = opts.slot_count(replicas) // replicas
    run = _run_lines(app, per, "$LSB_JOBID") if policy is None else _recovery_lines(app, per, policy)
    lines = [
        "#!/bin/bash",
        f"# torchx app {json.dumps(app.name, ensure_ascii=False)}: {replicas} replica(s) in one LSF job",
        _PRELUDE,
        *_replica_lines(app, _EXPANSIONS[_JOB_ID]),
        *run,
    ]
    args = bsub_args(app, opts, replicas, gpu_flag)
    if policy is not None:
        args.append("-r")
    return BsubRequest(args=args, script="\n".join(lines) + "\n", workdir=workdir, recovering=policy is not None)


def _common_name(apps: Sequence[AppDef]) -> str:
    """The apps' names' common prefix (without trailing separators), else the first app's name."""
    names = [app.name for app in apps]
    shortest, longest = min(names), max(names)  # the common prefix of all is theirs
    n = next((i for i, (a, b) in enumerate(zip(shortest, longest, strict=False)) if a != b), len(shortest))
    return shortest[:n].rstrip("-_.") or apps[0].name


def build_array_request(
    apps: Sequence[AppDef], opts: LsfOpts, max_parallel: int | None, gpu_flag: bool = True
) -> BsubRequest:
    """One job array running ``apps[i]`` as element ``i + 1`` (LSF indices start at 1), at most
    ``max_parallel`` at once (``-J "name[1-N]%K"``). Each element is a whole job of the apps'
    shape (any roles and replicas); the script picks the element's argv arrays by
    ``$LSB_JOBINDEX``, every word quoted as for one app. An element's app_id macro is its id
    ``<job>[<index>]``; its files are named ``lsf-<job>_<index>-...``.

    Raises:
        UnsupportedFeatureError: the apps differ in more than argv and env (roles, replicas,
            retries or any bsub option)
        ValueError: no apps, or ``max_parallel`` below 1
    """
    from torchx.schedulers.capabilities import UnsupportedFeatureError

    if not apps:
        raise ValueError("a job array needs at least one app")
    if max_parallel is not None and max_parallel < 1:
        raise ValueError(f"max_parallel must be at least 1, got {max_parallel}")
    first = apps[0]
    layout = [(role.name, role.num_replicas) for role in first.roles]
    replicas = _replicas(first)
    throttle = f"%{max_parallel}" if max_parallel else ""
    index = f"[1-{len(apps)}]{throttle}"
    name = array_job_name(_common_name(apps), layout, MAX_ARRAY_SPEC - len(index))
    args = bsub_args(first, opts, replicas, gpu_flag, name=name + index, files="%J_%I")
    retries = min(role.max_retries for role in first.roles)
    for app in apps[1:]:
        same = [(role.name, role.num_replicas) for role in app.roles] == layout
        if (
            not same
            or min(r.max_retries for r in app.roles) != retries
            or bsub_args(app, opts, replicas, gpu_flag, name=name + index, files="%J_%I") != args
        ):
            raise UnsupportedFeatureError("lsf job arrays need apps that differ only in arguments and env")
    workdir = os.path.abspath(opts.job_dir) if opts.job_dir else None
    lines = [
        "#!/bin/bash",
        f"# torchx job array of {len(apps)} app(s) like {json.dumps(first.name, ensure_ascii=False)}:"
        f" element i runs app i - 1, {replicas} replica(s) each",
        _PRELUDE,
        'case "$LSB_JOBINDEX" in',
    ]
    for i, app in enumerate(apps, start=1):
        lines.append(f"{i})")
        lines += ["    " + line for line in _replica_lines(app, ELEMENT_ID_TEXT)]
        lines.append("    ;;")
    lines += [
        '*) echo "torchx: this array has no element $LSB_JOBINDEX" >&2; exit 2 ;;',
        "esac",
        *_run_lines(first, opts.slot_count(replicas) // replicas, "${LSB_JOBID}_${LSB_JOBINDEX}"),
    ]
    return BsubRequest(args=args, script="\n".join(lines) + "\n", workdir=workdir)
