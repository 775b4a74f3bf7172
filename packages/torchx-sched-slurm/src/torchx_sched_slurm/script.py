"""Builds the ``sbatch`` script of an app (pure: no Slurm calls).

Shape: a heterogeneous job with one component per replica (roles in order, replicas in
order), each a single task on one node. One ``srun --het-group=i`` per component runs in
the background; the script waits for all of them, stops the others when one fails and
exits with the failing replica's code (so the job's exit code is that replica's). Every
value from the app reaches the process unchanged:

* ``#SBATCH`` values are double-quoted with backslash escapes (sbatch's own syntax);
* each replica's argv (``env -- K=V ... entrypoint args``) is a bash array of
  :func:`shlex.quote` d words; ``srun`` gets it as ``bash -c "exec ${argv[*]@Q}"`` so that
  no argument is ever a bare ``:`` (srun splits het groups at every ``:`` it sees);
* the ``app_id`` macro becomes ``"$SLURM_JOB_ID"``, expanded by the batch shell.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.roles import AppDef, Role

from torchx_sched_slurm.opts import SlurmOpts

#: stand for the Slurm job id and the replica id until the script is rendered (NUL cannot occur in argv or env)
_JOB_ID = "\0app_id\0"
_REPLICA = "\0replica_id\0"
_JOB_ID_SHELL = '"$SLURM_JOB_ID"'
_SAFE_SBATCH = re.compile(r"[A-Za-z0-9_.,:/=@%+-]+")
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def job_name(role: str, replica_id: int) -> str:
    """The Slurm job name of a replica's component: ``<role>-<replica id>``."""
    return f"{role}-{replica_id}"


def log_file(app_id: str, role: str, replica_id: int, stream: str) -> str:
    """A replica's output file, relative to the job's working directory (``stream``: out or err)."""
    return f"slurm-{app_id}-{_FILE_UNSAFE.sub('_', role)}-{replica_id}.{stream}"


def sbatch_quote(value: str) -> str:
    """Quotes a value for an ``#SBATCH`` line (sbatch unescapes ``\\x`` and strips quotes)."""
    if _SAFE_SBATCH.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def shell_word(value: str) -> str:
    """One shell word for ``value``, quoted, with the job-id placeholder expanded at run time."""
    if value == "":
        return "''"
    return _JOB_ID_SHELL.join(shlex.quote(part) if part else "" for part in value.split(_JOB_ID))


@dataclass
class SbatchRequest:
    """What ``sbatch`` is given: the script and the directory to submit from (None: the current one)."""

    script: str
    workdir: str | None

    def __str__(self) -> str:
        return self.script


def validate_app(app: AppDef) -> None:
    """Checks what the script cannot carry.

    Raises:
        ValueError: a role name, env name or value that cannot be passed to Slurm, and how to fix it
    """
    for role in app.roles:
        if any(ord(c) < 32 or c == "\x7f" for c in role.name):
            raise ValueError(f"role name {role.name!r} has control characters; use printable names")
        for key, value in role.env.items():
            if not _ENV_NAME.fullmatch(key):
                raise ValueError(
                    f"role {role.name!r}: env name {key!r} is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"
                )
            if "\0" in value:
                raise ValueError(f"role {role.name!r}: env {key} contains a NUL byte, which no process can receive")
        for arg in [role.entrypoint, *role.args]:
            if "\0" in arg:
                raise ValueError(f"role {role.name!r}: argument {arg!r} contains a NUL byte, which exec cannot pass")


def _resource_opts(role: Role, opts: SlurmOpts) -> list[tuple[str, str | None]]:
    res = role.resource
    out: list[tuple[str, str | None]] = [("nodes", "1"), ("ntasks", "1")]
    if res.cpu > 0:
        out.append(("cpus-per-task", str(res.cpu)))
    if res.memMB > 0 and not opts.nomem:
        out.append(("mem", f"{res.memMB}M"))
    if res.gpu > 0:
        out.append(("gpus-per-node", str(res.gpu)))
    return out


def _section(app: AppDef, role: Role, opts: SlurmOpts, workdir: str | None, first: bool) -> list[str]:
    """The ``#SBATCH`` lines of a component of ``role``, after its ``--job-name``."""
    pairs = _resource_opts(role, opts)
    for key, value in (
        ("partition", opts.partition),
        ("time", opts.time),
        ("constraint", opts.constraint),
        ("qos", opts.qos),
        ("account", opts.account),
        ("chdir", workdir),
    ):
        if value is not None:
            pairs.append((key, value))
    if opts.exclusive:
        pairs.append(("exclusive", None))
    if _max_retries(app) > 0:
        pairs.append(("requeue", None))
    if first:
        for key, value in (("comment", opts.comment), ("mail-user", opts.mail_user), ("mail-type", opts.mail_type)):
            if value is not None:
                pairs.append((key, value))
    return [_sbatch_line(k, v) for k, v in pairs]


def _sbatch_line(key: str, value: str | None) -> str:
    return f"#SBATCH --{key}" if value is None else f"#SBATCH --{key}={sbatch_quote(value)}"


def _max_retries(app: AppDef) -> int:
    """Job-level retries: the smallest ``max_retries`` of the roles (every role must agree to a rerun)."""
    return min(role.max_retries for role in app.roles)


def _argv_renderer(role: Role) -> Callable[[int], str]:
    """Renders the shell words of a replica's argv (``env -- K=V ... entrypoint args``).

    The macros are filled once per role; only words that use ``replica_id`` are quoted per replica.
    """
    values = macros.Values(img_root=role.image, app_id=_JOB_ID, replica_id=_REPLICA, rank0_env=RANK0_ENV)
    resolved = values.apply(role)
    words = ["env", "--", *(f"{k}={v}" for k, v in resolved.env.items()), resolved.entrypoint, *resolved.args]
    parts = [(w, "") if _REPLICA in w else ("", shell_word(w)) for w in words]

    def render(replica_id: int) -> str:
        k = str(replica_id)
        return " ".join(quoted or shell_word(word.replace(_REPLICA, k)) for word, quoted in parts)

    return render


def build_script(app: AppDef, opts: SlurmOpts) -> SbatchRequest:
    """The sbatch script (and submit directory) of ``app`` under ``opts``."""
    workdir = os.path.abspath(opts.job_dir) if opts.job_dir else None
    replicas = [(role, k) for role in app.roles for k in range(role.num_replicas)]
    retries = _max_retries(app)
    lines = [
        "#!/bin/bash",
        f"# torchx app {json.dumps(app.name, ensure_ascii=False)}: {len(replicas)} replica(s),"
        " one heterogeneous-job component each",
    ]
    for r, role in enumerate(app.roles):
        rest = _section(app, role, opts, workdir, first=False)
        for k in range(role.num_replicas):
            first = r == 0 and k == 0
            if not first:
                lines.append("#SBATCH hetjob")
            lines.append(_sbatch_line("job-name", job_name(role.name, k)))
            lines += _section(app, role, opts, workdir, first=True) if first else rest
    lines += [
        "",
        "# host of the first replica, named by the rank0_env macro",
        f'export {RANK0_ENV}="${{SLURM_JOB_NODELIST_HET_GROUP_0:-$SLURM_JOB_NODELIST}}"',
        "",
    ]
    i = 0
    for role in app.roles:
        render = _argv_renderer(role)
        for k in range(role.num_replicas):
            lines += [f"# {role.name}/{k}", f"replica_{i}=({render(k)})"]
            i += 1
    lines.append("")
    het = len(replicas) > 1
    mode = " --open-mode=append" if retries > 0 else ""
    for i, (role, k) in enumerate(replicas):
        group = f" --het-group={i}" if het else ""
        out = shell_word(log_file(_JOB_ID, role.name, k, "out"))
        err = shell_word(log_file(_JOB_ID, role.name, k, "err"))
        lines.append(f'srun{group} --output={out} --error={err}{mode} bash -c "exec ${{replica_{i}[*]@Q}}" &')
    lines += [
        "",
        "# wait for every replica; the first failure stops the others and is the job's exit code",
        "rc=0",
        f"for ((n = 0; n < {len(replicas)}; n++)); do",
        "    wait -n",
        "    code=$?",
        '    if [ "$code" -ne 0 ] && [ "$rc" -eq 0 ]; then',
        "        rc=$code",
        '        echo "torchx: a replica exited with code $code; stopping the others" >&2',
        "        kill $(jobs -p) 2>/dev/null",
        "    fi",
        "done",
    ]
    if retries > 0:
        lines += [
            f'if [ "$rc" -ne 0 ] && [ "${{SLURM_RESTART_COUNT:-0}}" -lt {retries} ]; then',
            '    echo "torchx: attempt $((${SLURM_RESTART_COUNT:-0} + 1)) failed with exit code $rc; requeueing" >&2',
            '    scontrol requeue "$SLURM_JOB_ID"',
            "fi",
        ]
    lines.append('exit "$rc"')
    return SbatchRequest(script="\n".join(lines) + "\n", workdir=workdir)
