"""Quoting an app's words for the shell scripts batch schedulers run (Slurm, LSF, ...).

A role's argv and env reach the process unchanged: every word is :func:`shlex.quote` d,
except placeholders (strings with NUL bytes, which no argv or env value can hold) that
stand for a shell expansion such as ``"$SLURM_JOB_ID"``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping

from torchx.specs.env_names import check_env
from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.roles import AppDef, Role
from torchx.specs.validation import check_passable

#: A bash function (one line) that batch scripts run replicas under: ``run_split BASE CMD...``
#: runs CMD with its stdout copied to ``BASE.out`` and its stderr to ``BASE.err`` (appending),
#: passes both on (stdout to stdout, stderr to stderr) for a file of all output, waits until
#: the copies are written and returns CMD's exit code. A warning signal sent to every process
#: of the job (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2: Slurm on preemption or time limit,
#: ``--signal``) reaches CMD while the wrapper and the copies live on, so CMD can checkpoint,
#: print and exit as it likes; if CMD dies of that signal, the wrapper then dies of it too.
RUN_SPLIT = (
    "run_split() { local b=$1 o e po pe rc; shift;"
    " exec {o}> >(trap '' TERM INT HUP USR1 USR2; exec tee -a \"$b.out\"); po=$!;"
    " exec {e}> >(trap '' TERM INT HUP USR1 USR2; exec tee -a \"$b.err\" >&2); pe=$!;"
    " trap : TERM INT HUP USR1 USR2;"
    ' "$@" >&"$o" 2>&"$e" {o}>&- {e}>&-; rc=$?; exec {o}>&- {e}>&-; wait "$po" "$pe";'
    " case $rc in 129|130|138|140|143) trap - $((rc - 128)); kill -$((rc - 128)) $BASHPID;; esac;"
    ' return "$rc"; }'
)
_PLACEHOLDER = re.compile(r"\0[^\0]*\0")


def placeholder(name: str) -> str:
    """A placeholder for :func:`shell_word` (``name`` must not contain NUL)."""
    return f"\0{name}\0"


def shell_word(value: str, expansions: Mapping[str, str]) -> str:
    """One shell word for ``value``: quoted, with each placeholder replaced by its raw expansion.

    Args:
        value: the word; may contain placeholders made by :func:`placeholder`
        expansions: placeholder -> shell text put in unquoted (e.g. ``'"$LSB_JOBID"'``)
    """
    if value == "":
        return "''"
    if "\0" not in value:
        return shlex.quote(value)
    out: list[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(value):
        if m.start() > pos:
            out.append(shlex.quote(value[pos : m.start()]))
        out.append(expansions[m.group()])
        pos = m.end()
    if pos < len(value):
        out.append(shlex.quote(value[pos:]))
    return "".join(out)


def validate_shell_app(app: AppDef) -> None:
    """Checks what a shell script cannot carry: control characters in role names, bad env
    names, NUL bytes in values.

    Raises:
        ValueError: what cannot be passed, and how to fix it
    """
    for role in app.roles:
        if any(ord(c) < 32 or c == "\x7f" for c in role.name):
            raise ValueError(f"role name {role.name!r} has control characters; use printable names")
        check_env(role)
        check_passable(role)


def argv_renderer(role: Role, app_id: str) -> Callable[[int], str]:
    """Renders the shell words of a replica's argv: ``env -- K=V ... entrypoint args``.

    Macros are filled: ``app_id`` with the shell text ``app_id`` (e.g. ``'"$LSB_JOBID"'``,
    expanded when the script runs), ``replica_id`` per replica, ``img_root`` with the role's
    image and ``rank0_env`` with :data:`~torchx.specs.macros.RANK0_ENV`. The macros are
    filled once per role; only words that use ``replica_id`` are quoted per replica.
    """
    job, replica = placeholder("app_id"), placeholder("replica_id")
    expansions = {job: app_id}
    values = macros.Values(img_root=role.image, app_id=job, replica_id=replica, rank0_env=RANK0_ENV)
    resolved = values.apply(role)
    words = ["env", "--", *(f"{k}={v}" for k, v in resolved.env.items()), resolved.entrypoint, *resolved.args]
    if not any(replica in w for w in words):
        same = " ".join(shell_word(w, expansions) for w in words)
        return lambda replica_id: same
    parts = [(w, "") if replica in w else ("", shell_word(w, expansions)) for w in words]

    def render(replica_id: int) -> str:
        k = str(replica_id)
        return " ".join(quoted or shell_word(word.replace(replica, k), expansions) for word, quoted in parts)

    return render


def wait_for_replicas(stop: str = "kill $(jobs -p) 2>/dev/null") -> list[str]:
    """Bash lines that wait for the background replicas whose pids are in the array ``pids``;
    the first that fails stops the others (shell command ``stop``) and its exit code is left
    in ``$rc`` (0 when all succeeded).

    Each pid's status is read with ``wait PID`` once it is gone: a bare ``wait -n`` loses the
    status of jobs that end at the same moment (bash 5.2 returns 127 for them).
    """
    return [
        "# wait for every replica; the first failure stops the others and is the job's exit code",
        "rc=0",
        "while [ ${#pids[@]} -gt 0 ]; do",
        "    wait -n 2>/dev/null || sleep 0.1",
        "    left=()",
        '    for p in "${pids[@]}"; do',
        '        if kill -0 "$p" 2>/dev/null; then left+=("$p"); continue; fi',
        '        wait "$p"',
        "        code=$?",
        '        if [ "$code" -ne 0 ] && [ "$rc" -eq 0 ]; then',
        "            rc=$code",
        '            echo "torchx: a replica exited with code $code; stopping the others" >&2',
        f"            {stop}",
        "        fi",
        "    done",
        '    pids=("${left[@]}")',
        "done",
    ]
