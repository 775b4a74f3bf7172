"""Recovery a scheduler runs itself (optional extension point): a managed job compiled into the
backend's own mechanisms, so it keeps going with no torchx process outside the cluster.

A scheduler that can do this declares ``capabilities.recovery`` and implements
:meth:`~torchx.schedulers.Scheduler.submit_recovery_dryrun` (the request that runs the app and
recovers it by a :class:`RecoveryPolicy`) and
:meth:`~torchx.schedulers.Scheduler.recovery_attempts` (the attempts of such a job, read from
the backend's own records, so that any machine that reaches the backend can read them).
``torchx-managed`` uses them for jobs with one target.

Schedulers whose job is a batch shell script (Slurm, LSF) share the in-job restart loop
:func:`restart_loop` and its attempt log, read back by :func:`read_attempt_log`. The log is a
text file of one line per step, appended by the job's batch shell only::

    start N REQUEUE T      # attempt N started (REQUEUE: how often the backend requeued the job)
    end N RC CAUSE T       # attempt N ended with exit code RC (``-``: unknown) and a cause:
                           #   SUCCEEDED, APP_ERROR, KILLED, RECOVER (an exit code of
                           #   recover_on_exit_codes) or LOST (the allocation was lost: the
                           #   backend requeued the job while the attempt ran)
    backoff N SECONDS T    # the batch shell waits SECONDS before attempt N (a crash loop)
    final STATE T          # the job ended: SUCCEEDED, or FAILED with a budget used up

``T`` is the time in seconds since the epoch (with nanoseconds where `date` gives them).

Schedulers whose records keep a job's key-value pairs (an AWS Batch job's tags, a Ray job's
metadata) mark a job submitted to recover with :data:`RECOVERY_MARK` (its value:
:func:`policy_mark`), so that their ``recovery_attempts`` and ``recovery_list`` tell it from a
plain job.
"""

from __future__ import annotations

from torchx.schedulers.causes import EndCause, signal_cause
from torchx.schedulers.shell import shell_word
from torchx.util.record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "RECOVERY_MARK",
    "RecoveryPolicy",
    "RecoveredAttempt",
    "AttemptLog",
    "policy_mark",
    "restart_loop",
    "read_attempt_log",
]

#: seconds the batch shell waits for the backend to requeue a job whose node was lost, before
#: it runs the next attempt itself
LOST_WAIT = 60
#: seconds before the first restart after an application error when the user chose none
#: (doubled per error in a row up to ``max_backoff``, as Kubernetes' CrashLoopBackOff)
DEFAULT_RESTART_BACKOFF = 1.0
#: the highest signal number whose ``128 + N`` exit status reads as "killed by signal N"
_MAX_SIGNAL = 64


@record(frozen=True)
class RecoveryPolicy:
    """How a job recovers: the budgets and checkpoint contract of ``torchx-managed``.

    Attributes:
        max_restarts: restarts after the application's errors (APP_ERROR)
        max_recoveries: restarts after the infrastructure's failures (a lost node, a
            preemption, a kill from outside)
        recover_on_exit_codes: exit codes that restart without counting
        checkpoint_dir: every attempt's ``TORCHX_CHECKPOINT_DIR`` (None: the scheduler picks a
            directory next to the job's logs, on the storage its nodes share)
        restart_backoff: seconds waited before the first restart after an application error;
            doubled for each further one in a row (0: restart at once; None: not chosen by the
            user, so the scheduler's own pace: :data:`DEFAULT_RESTART_BACKOFF` where it waits
            itself, the backend's where it does)
        max_backoff: the longest such wait
    """

    max_restarts: int = 0
    max_recoveries: int = 10
    recover_on_exit_codes: tuple[int, ...] = ()
    checkpoint_dir: str | None = None
    restart_backoff: float | None = None
    max_backoff: float = 300.0


#: the key a scheduler marks a job with, in its own records, when the job was submitted to
#: recover inside it (see the module docstring)
RECOVERY_MARK = "torchx.pytorch.org/recovery"


def policy_mark(policy: RecoveryPolicy) -> str:
    """The value of a job's :data:`RECOVERY_MARK`: the policy's budgets as one line of letters,
    digits, ``_``, ``-``, ``=``, ``.``, ``:`` and spaces (fit for an AWS tag value, a Ray job's metadata),
    e.g. ``max_restarts=1 max_recoveries=10 recover_on_exit_codes=3:75``. The checkpoint
    directory, which may hold any character, is not in it."""
    words = [f"max_restarts={policy.max_restarts}", f"max_recoveries={policy.max_recoveries}"]
    if policy.recover_on_exit_codes:
        codes = ":".join(str(c) for c in sorted(set(policy.recover_on_exit_codes)))
        words.append(f"recover_on_exit_codes={codes}")
    if policy.restart_backoff is not None:
        words.append(f"restart_backoff={policy.restart_backoff:g} max_backoff={policy.max_backoff:g}")
    return " ".join(words)


@record
class RecoveredAttempt:
    """One attempt of a job that recovers inside its scheduler.

    Attributes:
        n: 0, 1, 2 ... (the attempt's ``TORCHX_ATTEMPT``)
        state: its final state's name (``SUCCEEDED``, ``FAILED``, ``CANCELLED``), None while it runs
        cause: why it ended, in :class:`~torchx.schedulers.causes.EndCause`'s words (None while
            it runs, and for a success)
        exit_code: its exit code where known
        reason: the backend's or the batch shell's words
        started: when it started (seconds since the epoch)
        ended: when it ended (None while it runs)
    """

    n: int
    state: str | None = None
    cause: str | None = None
    exit_code: int | None = None
    reason: str = ""
    started: float | None = None
    ended: float | None = None

    def as_json(self, handle: str, scheduler: str, live_state: str | None = None) -> dict[str, Any]:
        """The attempt as ``torchx status --json`` shows a managed job's attempts."""
        return {
            "attempt": self.n,
            "handle": handle,
            "scheduler": scheduler,
            "state": self.state or live_state or "RUNNING",
            "cause": self.cause,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "started": self.started,
            "ended": self.ended,
        }


@record
class AttemptLog:
    """What an attempt log (:func:`restart_loop`) says.

    Attributes:
        attempts: every attempt, oldest first; a ``LOST`` end has cause ``NODE_FAILURE`` until
            the scheduler names it from its own records (:meth:`name_lost`)
        final: ``SUCCEEDED`` or ``FAILED`` once the batch shell ended the job, else None
        backoff_until: while the shell waits before the next attempt, when it starts it
        lost: the numbers of the attempts whose allocation was lost, oldest first
    """

    attempts: list[RecoveredAttempt] = field(default_factory=list)
    final: str | None = None
    backoff_until: float | None = None
    lost: list[int] = field(default_factory=list)

    def name_lost(self, causes: list[tuple[EndCause, str]]) -> None:
        """Gives the i-th lost attempt the i-th (cause, reason) the scheduler's records name for
        its requeues (e.g. Slurm's NODE_FAIL, PREEMPTED), where it has one."""
        by_n = {a.n: a for a in self.attempts}
        for n, (cause, reason) in zip(self.lost, causes, strict=False):
            attempt = by_n[n]
            attempt.cause, attempt.reason = cause.value, reason


def _killed_codes() -> list[int]:
    """Exit statuses ``128 + N`` of the signals that read as a kill from outside (not a crash)."""
    return [128 + s for s in range(1, _MAX_SIGNAL + 1) if signal_cause(s) == EndCause.KILLED]


def restart_loop(
    policy: RecoveryPolicy,
    run_lines: list[str],
    log_path: str,
    requeue_count: str,
    default_checkpoint_dir: str,
    lost_wait: int = LOST_WAIT,
) -> list[str]:
    """Bash lines that run ``run_lines`` as attempts until one succeeds or a budget is used up.

    Args:
        policy: the budgets (application errors restart in the job, with back-off; a lost
            allocation is the backend's requeue, counted here against ``max_recoveries``)
        run_lines: lines that run one attempt and leave its exit code in ``$rc``, and
            ``tx_lost=1`` where a replica never reported its own end (its node was lost: the
            backend ends and requeues the job, which this loop then waits for)
        log_path: the attempt log's path, as a bash word (it may expand variables)
        requeue_count: a bash expression of how often the backend requeued the job
        default_checkpoint_dir: ``TORCHX_CHECKPOINT_DIR`` as a bash word when the policy names none
        lost_wait: seconds to wait for the backend's requeue after a lost node

    Every attempt gets ``TORCHX_ATTEMPT`` (counted across requeues, from the log) and
    ``TORCHX_CHECKPOINT_DIR``. SIGTERM to the batch shell (a cancel, a preemption) ends the loop
    after the running attempt: nothing new starts. The script exits 0 when an attempt
    succeeded, else with the last attempt's exit code.
    """
    ckpt = default_checkpoint_dir if policy.checkpoint_dir is None else shell_word(policy.checkpoint_dir, {})
    recover = "|".join(str(c) for c in sorted(set(policy.recover_on_exit_codes)))
    killed = "|".join(str(c) for c in _killed_codes() if c not in policy.recover_on_exit_codes)
    lines = [
        "",
        "# torchx managed: attempts run here until one succeeds or a budget is used up",
        f"tx_log={log_path}",
        f"export TORCHX_CHECKPOINT_DIR={ckpt}",
        'mkdir -p -- "$TORCHX_CHECKPOINT_DIR"',
        'tx_count() { local c; c=$(grep -cE "$1" -- "$tx_log" 2>/dev/null); echo "${c:-0}"; }',
        'tx_note() { echo "$* $(date +%s.%N)" >> "$tx_log"; }',
        "# tx_sleep N: waits N seconds, ending within 0.1 s of a stop (a wait on a background sleep",
        "# missed a SIGTERM that came just before it began, and slept on)",
        'tx_sleep() { local i; for ((i = 0; i < $1 * 10; i++)); do [ "$tx_stop" = 1 ] && return; sleep 0.1; done; }',
        "tx_stop=0",
        "trap 'tx_stop=1' TERM",
        "TORCHX_ATTEMPT=$(tx_count '^start ')",
        "export TORCHX_ATTEMPT",
        'if [ "$(tx_count \'^end \')" -lt "$TORCHX_ATTEMPT" ]; then',
        "    tx_note end $((TORCHX_ATTEMPT - 1)) - LOST",
        "fi",
        f"if [ $(($(tx_count '^end [0-9]+ [^ ]+ (LOST|KILLED) '))) -gt {policy.max_recoveries} ]; then",
        f'    echo "torchx: max_recoveries={policy.max_recoveries} used up; not starting attempt $TORCHX_ATTEMPT" >&2',
        "    tx_note final FAILED",
        "    exit 1",
        "fi",
        "tx_errors_in_a_row=0",
        "while :; do",
        f'    tx_note start "$TORCHX_ATTEMPT" "{requeue_count}"',
        *("    " + line if line else line for line in run_lines),
        '    [ "$tx_stop" = 1 ] && exit "$rc"',
        '    if [ "$tx_lost" = 1 ]; then',
        '        tx_note end "$TORCHX_ATTEMPT" - LOST',
        f'        echo "torchx: attempt $TORCHX_ATTEMPT lost a node; waiting up to {lost_wait}s for the requeue" >&2',
        f"        tx_sleep {lost_wait}",
        '        [ "$tx_stop" = 1 ] && exit 1',
        "        tx_lost=0 tx_cause=LOST",
        "    else",
        '        case "$rc" in',
        "            0) tx_cause=SUCCEEDED ;;",
        *([f"            {recover}) tx_cause=RECOVER ;;"] if recover else []),
        f"            {killed}) tx_cause=KILLED ;;",
        "            *) tx_cause=APP_ERROR ;;",
        "        esac",
        '        tx_note end "$TORCHX_ATTEMPT" "$rc" "$tx_cause"',
        '        if [ "$rc" -eq 0 ]; then tx_note final SUCCEEDED; exit 0; fi',
        "    fi",
        '    if [ "$tx_cause" = APP_ERROR ]; then',
        "        tx_errors_in_a_row=$((tx_errors_in_a_row + 1))",
        f"        if [ \"$(tx_count '^end [0-9]+ [^ ]+ APP_ERROR ')\" -gt {policy.max_restarts} ]; then",
        f'            echo "torchx: attempt $TORCHX_ATTEMPT exited with code $rc; max_restarts={policy.max_restarts}'
        ' used up" >&2',
        '            tx_note final FAILED; exit "$rc"',
        "        fi",
        "    else",
        "        tx_errors_in_a_row=0",
        "    fi",
        f"    if [ \"$(tx_count '^end [0-9]+ [^ ]+ (LOST|KILLED) ')\" -gt {policy.max_recoveries} ]; then",
        f'        echo "torchx: attempt $TORCHX_ATTEMPT was killed; max_recoveries={policy.max_recoveries} used up" >&2',
        '        tx_note final FAILED; exit "$rc"',
        "    fi",
        "    TORCHX_ATTEMPT=$((TORCHX_ATTEMPT + 1))",
    ]
    backoff = DEFAULT_RESTART_BACKOFF if policy.restart_backoff is None else policy.restart_backoff
    if backoff > 0:
        base, cap = max(1, round(backoff)), max(1, round(policy.max_backoff))
        lines += [
            '    if [ "$tx_errors_in_a_row" -gt 0 ]; then',
            f"        tx_wait={base}",
            "        for ((i = 1; i < tx_errors_in_a_row; i++)); do tx_wait=$((tx_wait * 2)); done",
            f'        [ "$tx_wait" -gt {cap} ] && tx_wait={cap}',
            '        echo "torchx: attempt $((TORCHX_ATTEMPT - 1)) exited with code $rc; restarting in ${tx_wait}s" >&2',
            '        tx_note backoff "$TORCHX_ATTEMPT" "$tx_wait"',
            '        tx_sleep "$tx_wait"',
            '        [ "$tx_stop" = 1 ] && exit "$rc"',
            "    fi",
        ]
    lines += [
        '    echo "torchx: restarting: attempt $TORCHX_ATTEMPT" >&2',
        "done",
    ]
    return lines


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def read_attempt_log(text: str) -> AttemptLog:
    """The attempts an attempt log (:func:`restart_loop`) records; lines it cannot read (a
    torn last line) are passed over."""
    log = AttemptLog()
    by_n: dict[int, RecoveredAttempt] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        kind, when = words[0], _number(words[-1])
        if kind == "final" and len(words) == 3:
            log.final = words[1]
        elif kind in ("start", "end", "backoff") and words[1].isdigit():
            n = int(words[1])
            if kind == "start" and len(words) == 4:
                attempt = RecoveredAttempt(n, started=when)
                by_n[n] = attempt
                log.attempts.append(attempt)
                log.backoff_until = None
            elif kind == "end" and len(words) == 5 and n in by_n:
                _end(by_n[n], words[2], words[3], when, log)
            elif kind == "backoff" and len(words) == 4 and when is not None:
                wait = _number(words[2])
                log.backoff_until = None if wait is None else when + wait
    if log.final is not None:
        log.backoff_until = None
    return log


def _end(attempt: RecoveredAttempt, rc_text: str, cause: str, when: float | None, log: AttemptLog) -> None:
    rc = int(rc_text) if rc_text.lstrip("-").isdigit() else None
    attempt.exit_code, attempt.ended = rc, when
    if cause == "SUCCEEDED":
        attempt.state = "SUCCEEDED"
    elif cause == "LOST":
        attempt.state, attempt.cause = "FAILED", EndCause.NODE_FAILURE.value
        attempt.reason = "the job's allocation was lost; the scheduler requeued it"
        log.lost.append(attempt.n)
    elif cause == "RECOVER":
        attempt.state, attempt.cause = "FAILED", EndCause.APP_ERROR.value
        attempt.reason = f"exit code {rc} of recover_on_exit_codes: restarted, uncounted"
    elif cause == "KILLED":
        attempt.state, attempt.cause = "FAILED", EndCause.KILLED.value
        attempt.reason = "killed by a signal torchx did not send"
    else:
        attempt.state, attempt.cause = "FAILED", EndCause.APP_ERROR.value
        attempt.reason = f"exited with code {rc}"
