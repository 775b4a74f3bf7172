"""Builds the ``sbatch`` script of an app (pure: no Slurm calls).

Shape: a heterogeneous job with one component per replica (roles in order, replicas in
order), each a single task on one node. One ``srun --het-group=i`` per component runs in
the background; the script waits for all of them, stops the others when one fails and
exits with the failing replica's code (so the job's exit code is that replica's). A
replica's stdout and stderr go, as they come, to ``slurm-<job>-<role>-<k>.log`` (srun's
``--output``), and each also to its own file (``.out``, ``.err``; split on the node by
``run_split``). Every value from the app reaches the process unchanged:

* ``#SBATCH`` values are double-quoted with backslash escapes (sbatch's own syntax);
* each replica's argv (``env -- K=V ... entrypoint args``) is a bash array of
  :func:`shlex.quote` d words; ``srun`` gets it inside one ``bash -c`` string
  (``${argv[*]@Q}``) so that no argument is ever a bare ``:`` (srun splits het groups at
  every ``:`` it sees);
* the ``app_id`` macro becomes ``"$SLURM_JOB_ID"``, expanded by the batch shell.

A sweep's trials (apps of one replica each, differing only in argv and env) become one job
array (:func:`build_array_script`): ``#SBATCH --array=0-(N-1)%K`` and a ``case`` on
``$SLURM_ARRAY_TASK_ID`` that picks the trial's argv array (quoted like any other). An
element's ``app_id`` is ``<array job id>_<task id>``, which ``squeue``/``sacct``/``scancel``
accept and its log files are named by.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from torchx.schedulers.recovery import RecoveryPolicy, restart_loop
from torchx.schedulers.shell import RUN_SPLIT, argv_renderer, placeholder, wait_for_replicas
from torchx.schedulers.shell import shell_word as _quote
from torchx.specs.macros import RANK0_ENV
from torchx.specs.roles import AppDef, Role

from torchx_sched_slurm.opts import SlurmOpts

#: stand for the Slurm job id and the replica id until the script is rendered (NUL cannot occur in argv or env)
_JOB_ID = placeholder("app_id")
_EXPANSIONS = {_JOB_ID: '"$SLURM_JOB_ID"'}
#: an array element's own id, ``<array job id>_<task id>``
_ELEMENT_ID = "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
_ARRAY_EXPANSIONS = {_JOB_ID: f'"{_ELEMENT_ID}"'}
_SAFE_SBATCH = re.compile(r"[A-Za-z0-9_.,:/=@%+-]+")
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def job_name(role: str, replica_id: int) -> str:
    """The Slurm job name of a replica's component: ``<role>-<replica id>``."""
    return f"{role}-{replica_id}"


def log_file(app_id: str, role: str, replica_id: int, stream: str) -> str:
    """A replica's output file, relative to the job's working directory (``stream``: out, err, or log for both)."""
    return f"slurm-{app_id}-{_FILE_UNSAFE.sub('_', role)}-{replica_id}.{stream}"


def sbatch_quote(value: str) -> str:
    """Quotes a value for an ``#SBATCH`` line (sbatch unescapes ``\\x`` and strips quotes)."""
    if _SAFE_SBATCH.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def shell_word(value: str) -> str:
    """One shell word for ``value``, quoted, with the job-id placeholder expanded at run time."""
    return _quote(value, _EXPANSIONS)


#: the ``sbatch`` command every job is submitted with (the job id alone on stdout)
SUBMIT = ("sbatch", "--parsable")


@dataclass
class SbatchRequest:
    """What ``sbatch`` is given: the script, the directory to submit from (None: the current
    one) and the command line (:attr:`cmd`)."""

    script: str
    workdir: str | None
    #: the job recovers in Slurm (:func:`build_script` with a policy): its attempt log is made at submit
    recovering: bool = False
    #: the ``sbatch`` command line (TorchX's ``SlurmBatchRequest.cmd``): ``sbatch --parsable`` and
    #: the options of the job as a whole (``--comment``, ``--mail-user``, ``--mail-type``)
    cmd: list[str] = field(default_factory=lambda: list(SUBMIT))

    def __str__(self) -> str:
        return self.script

    def materialize(self) -> str:
        """The script's text (TorchX's ``SlurmBatchRequest.materialize``)."""
        return self.script

    @property
    def job_dir(self) -> str | None:
        """The directory the job is submitted from (TorchX's name of :attr:`workdir`)."""
        return self.workdir


def resource_opts(role: Role, opts: SlurmOpts) -> list[tuple[str, str | None]]:
    """The ``#SBATCH`` options (name, value or None for a flag) that size one replica of ``role``."""
    res = role.resource
    out: list[tuple[str, str | None]] = [("nodes", "1"), ("ntasks", "1")]
    if res.cpu > 0:
        out.append(("cpus-per-task", str(res.cpu)))
    if res.memMB > 0 and not opts.nomem:
        out.append(("mem", f"{res.memMB}M"))
    if res.gpu > 0:
        out.append(("gpus-per-node", str(res.gpu)))
    return out


def attempt_log(app_id: str) -> str:
    """The attempt log of a job that recovers in Slurm, relative to its working directory."""
    return f"slurm-{app_id}.attempts"


def _section(app: AppDef, role: Role, opts: SlurmOpts, workdir: str | None, requeue: bool = False) -> list[str]:
    """The ``#SBATCH`` lines of a component of ``role``, after its ``--job-name`` (``requeue``:
    the job may be requeued whatever its roles' ``max_retries``)."""
    pairs = resource_opts(role, opts)
    for key, value in (
        ("partition", opts.partition),
        ("time", opts.time),
        ("signal", opts.signal),
        ("constraint", opts.constraint),
        ("qos", opts.qos),
        ("account", opts.account),
        ("chdir", workdir),
    ):
        if value is not None:
            pairs.append((key, value))
    if opts.exclusive:
        pairs.append(("exclusive", None))
    if requeue or _max_retries(app) > 0:
        pairs.append(("requeue", None))
    return [_sbatch_line(k, v) for k, v in pairs]


def submit_cmd(opts: SlurmOpts) -> list[str]:
    """``sbatch --parsable`` with the options of the job as a whole, as TorchX passes them: on
    the command line (an argv, never parsed by a shell)."""
    cmd = list(SUBMIT)
    for key, value in (("comment", opts.comment), ("mail-user", opts.mail_user), ("mail-type", opts.mail_type)):
        if value is not None:
            cmd.append(f"--{key}={value}")
    return cmd


def _submitted_with(cmd: list[str]) -> str:
    """The script's comment line showing ``cmd`` (run options are single lines: so is this)."""
    return f"# submitted with: {shlex.join(cmd)}"


def _sbatch_line(key: str, value: str | None) -> str:
    return f"#SBATCH --{key}" if value is None else f"#SBATCH --{key}={sbatch_quote(value)}"


def _max_retries(app: AppDef) -> int:
    """Job-level retries: the smallest ``max_retries`` of the roles (every role must agree to a rerun)."""
    return min(role.max_retries for role in app.roles)


def build_script(app: AppDef, opts: SlurmOpts, policy: RecoveryPolicy | None = None) -> SbatchRequest:
    """The sbatch script (and submit directory) of ``app`` under ``opts``; with ``policy``, a job
    that recovers in Slurm: ``--requeue`` after a lost node or a preemption, and the attempts
    of :func:`torchx.schedulers.recovery.restart_loop` in the batch script, logged to
    :func:`attempt_log` (``TORCHX_ATTEMPT`` counted across requeues)."""
    workdir = os.path.abspath(opts.job_dir) if opts.job_dir else None
    replicas = [(role, k) for role in app.roles for k in range(role.num_replicas)]
    retries = _max_retries(app)
    requeue = policy is not None
    cmd = submit_cmd(opts)
    lines = [
        "#!/bin/bash",
        f"# torchx app {json.dumps(app.name, ensure_ascii=False)}: {len(replicas)} replica(s),"
        " one heterogeneous-job component each",
        _submitted_with(cmd),
    ]
    for r, role in enumerate(app.roles):
        section = _section(app, role, opts, workdir, requeue=requeue)
        for k in range(role.num_replicas):
            if r or k:
                lines.append("#SBATCH hetjob")
            lines.append(_sbatch_line("job-name", job_name(role.name, k)))
            lines += section
    lines += [
        "",
        "# host of the first replica, named by the rank0_env macro",
        f'export {RANK0_ENV}="${{SLURM_JOB_NODELIST_HET_GROUP_0:-$SLURM_JOB_NODELIST}}"',
        "",
    ]
    i = 0
    for role in app.roles:
        render = argv_renderer(role, _EXPANSIONS[_JOB_ID])
        for k in range(role.num_replicas):
            lines += [f"# {role.name}/{k}", f"replica_{i}=({render(k)})"]
            i += 1
    run = _run_lines(replicas, retries > 0 or requeue, _EXPANSIONS, "${SLURM_JOB_ID}", report=requeue)
    if policy is not None:
        lines += restart_loop(
            policy,
            run,
            log_path=f'"{attempt_log("${SLURM_JOB_ID}")}"',
            requeue_count="${SLURM_RESTART_COUNT:-0}",
            default_checkpoint_dir='"$PWD/slurm-${SLURM_JOB_ID}.checkpoints"',
        )
    else:
        lines += [*run, *_requeue_lines(retries), 'exit "$rc"']
    return SbatchRequest(script="\n".join(lines) + "\n", workdir=workdir, recovering=policy is not None, cmd=cmd)


def _run_lines(
    replicas: list[tuple[Role, int]], append: bool, expansions: dict[str, str], job_id_var: str, report: bool = False
) -> list[str]:
    """The ``srun`` of each replica (backgrounded) and the wait for all of them, which leaves
    the first failure's exit code in ``$rc`` (``append``: the logs keep earlier attempts' output).

    With ``report`` each replica writes its own exit code to ``<log base>.rc`` when it ends, and
    ``tx_lost=1`` is left when all seemed to succeed but one did not write it (``srun`` exits 0
    when it loses its node)."""
    lines = [
        "",
        "# replicas run under run_split: stdout also to .out, stderr also to .err",
        f"split={shell_word(RUN_SPLIT)}",
    ]
    het = len(replicas) > 1
    mode = " --open-mode=append" if append else ""
    bases = [log_file(job_id_var, role.name, k, "")[:-1] for role, k in replicas]  # safe characters only
    if report:
        lines.append("rm -f -- " + " ".join(f'"{base}.rc"' for base in bases))
    for i, (role, k) in enumerate(replicas):
        group = f" --het-group={i}" if het else ""
        both = _quote(log_file(_JOB_ID, role.name, k, "log"), expansions)
        run = f"run_split {bases[i]} ${{replica_{i}[*]@Q}}"
        if report:
            run += f"; r=\\$?; echo \\$r > {bases[i]}.rc; exit \\$r"
        lines.append(f'srun{group} --output={both}{mode} bash -c "$split; {run}" &')
        lines.append("pids+=($!)")
    lines += ["", *wait_for_replicas()]
    if report:
        lines += [
            "tx_lost=0",
            'if [ "$rc" -eq 0 ]; then',
            *(f'    [ -s "{base}.rc" ] || tx_lost=1' for base in bases),
            "fi",
        ]
    return lines


def _requeue_lines(retries: int) -> list[str]:
    """The requeue of a failed job while ``SLURM_RESTART_COUNT`` is below the roles' ``max_retries``."""
    if retries <= 0:
        return []
    return [
        f'if [ "$rc" -ne 0 ] && [ "${{SLURM_RESTART_COUNT:-0}}" -lt {retries} ]; then',
        '    echo "torchx: attempt $((${SLURM_RESTART_COUNT:-0} + 1)) failed with exit code $rc; requeueing" >&2',
        '    scontrol requeue "$SLURM_JOB_ID"',
        "fi",
    ]


def build_array_script(apps: Sequence[AppDef], opts: SlurmOpts, max_parallel: int | None) -> SbatchRequest:
    """One job array running ``apps[i]`` as task ``i`` (at most ``max_parallel`` at once).

    Raises:
        UnsupportedFeatureError: an app has more than one replica (Slurm has no arrays of
            heterogeneous jobs), or the apps differ in more than argv and env
    """
    from torchx.schedulers.capabilities import UnsupportedFeatureError

    if not apps:
        raise ValueError("a job array needs at least one app")
    workdir = os.path.abspath(opts.job_dir) if opts.job_dir else None
    first = apps[0]
    if any(len(a.roles) != 1 or a.roles[0].num_replicas != 1 for a in apps):
        raise UnsupportedFeatureError("slurm job arrays need apps of one role with one replica (no het-job arrays)")
    role = first.roles[0]
    header = [_sbatch_line("job-name", job_name(role.name, 0)), *_section(first, role, opts, workdir)]
    for app in apps[1:]:
        other = app.roles[0]
        if other.name != role.name or _section(app, other, opts, workdir) != header[1:]:
            raise UnsupportedFeatureError("slurm job arrays need trials that differ only in arguments and env")
    throttle = f"%{max_parallel}" if max_parallel else ""
    cmd = submit_cmd(opts)
    lines = [
        "#!/bin/bash",
        f"# torchx job array of {len(apps)} app(s) like {json.dumps(first.name, ensure_ascii=False)};"
        " task i runs app i",
        _submitted_with(cmd),
        *header,
        f"#SBATCH --array=0-{len(apps) - 1}{throttle}",
        "",
        f'export {RANK0_ENV}="$SLURM_JOB_NODELIST"',
        "",
        'case "$SLURM_ARRAY_TASK_ID" in',
    ]
    for i, app in enumerate(apps):
        render = argv_renderer(app.roles[0], _ARRAY_EXPANSIONS[_JOB_ID])
        lines.append(f"    {i}) replica_0=({render(0)}) ;;")
    lines += [
        '    *) echo "torchx: this array has no task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;',
        "esac",
    ]
    retries = _max_retries(first)
    lines += [*_run_lines([(role, 0)], retries > 0, _ARRAY_EXPANSIONS, _ELEMENT_ID), *_requeue_lines(retries)]
    lines.append('exit "$rc"')
    return SbatchRequest(script="\n".join(lines) + "\n", workdir=workdir, cmd=cmd)
