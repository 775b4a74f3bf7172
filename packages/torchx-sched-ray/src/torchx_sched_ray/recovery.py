"""Recovery inside the Ray job (``capabilities.recovery``, used by ``torchx-managed``): the
on-cluster driver loops the attempts itself (pure: no Ray import, no cluster call).

The job's entrypoint is the Python driver (``python -m torchx_ray_driver``), not a shell
script, so core's bash :func:`~torchx.schedulers.recovery.restart_loop` does not apply; the
driver runs the same budgets (:meth:`torchx_ray_driver.driver.Driver.run_recovering`) from the
policy written into ``app.json`` (:func:`policy_spec`), and records each attempt's start and
end in the job's log, which :func:`read_attempts` reads back through the Jobs API. The job's
metadata carries :data:`~torchx.schedulers.recovery.RECOVERY_MARK` (the budgets,
:func:`~torchx.schedulers.recovery.policy_mark`): the Jobs API returns it with the job's info
and in ``list_jobs``, so ``recovery_attempts`` and ``recovery_list`` tell such a job from a plain
one, from any machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torchx.schedulers.causes import EndCause, signal_cause
from torchx.schedulers.recovery import DEFAULT_RESTART_BACKOFF, AttemptLog, RecoveredAttempt, RecoveryPolicy

from torchx_sched_ray.causes import ray_end
from torchx_sched_ray.torchx_ray_driver import records

#: TORCHX_CHECKPOINT_DIR's parent when the policy names none (on each node's disk)
DEFAULT_CHECKPOINT_ROOT = "/tmp/torchx-checkpoints"
_MAX_SIGNAL = 64


def policy_spec(policy: RecoveryPolicy, submission_id: str) -> dict[str, Any]:
    """``app.json``'s ``recovery``: the budgets, and the signals that read as a kill from
    outside (counted against ``max_recoveries``, as in core's restart loop)."""
    return {
        "max_restarts": policy.max_restarts,
        "max_recoveries": policy.max_recoveries,
        "recover_on_exit_codes": sorted(set(policy.recover_on_exit_codes)),
        "killed_signals": [s for s in range(1, _MAX_SIGNAL + 1) if signal_cause(s) == EndCause.KILLED],
        "checkpoint_dir": policy.checkpoint_dir or f"{DEFAULT_CHECKPOINT_ROOT}/{submission_id}",
        "restart_backoff": DEFAULT_RESTART_BACKOFF if policy.restart_backoff is None else policy.restart_backoff,
        "max_backoff": policy.max_backoff,
    }


def read_attempts(lines: Iterable[str]) -> AttemptLog:
    """The attempts the driver recorded in the job's log: each starts at an ``a`` record and
    ends at an ``x`` record; a failed one's cause is read from its own records as
    :func:`~torchx_sched_ray.causes.ray_end` reads a job's."""
    log = AttemptLog()
    own: list[str] = []  # the running attempt's lines
    for line in lines:
        rec = records.parse(line)
        if rec is None:
            continue
        if rec.kind == records.ATTEMPT and rec.payload.strip().isdigit():
            log.attempts.append(RecoveredAttempt(int(rec.payload), started=rec.moment))
            log.backoff_until, own = None, []
        elif rec.kind == records.ATTEMPT_END and log.attempts:
            _end(log.attempts[-1], rec.payload.split(), rec.moment, own)
        elif rec.kind == records.BACKOFF:
            words = rec.payload.split()
            if len(words) == 2:
                log.backoff_until = rec.moment + float(words[1])
        else:
            own.append(line)
    return log


def _end(attempt: RecoveredAttempt, words: list[str], when: float, own: list[str]) -> None:
    if len(words) != 3:
        return
    code, budget = words[1], words[2]
    attempt.ended = when
    attempt.exit_code = int(code) if code.lstrip("-").isdigit() else None
    if budget == "SUCCEEDED":
        attempt.state = "SUCCEEDED"
        return
    attempt.state = "FAILED"
    end = ray_end("FAILED", "", own)
    if end is not None:
        attempt.cause, attempt.reason = end.cause.value, end.reason
        attempt.exit_code = end.exit_code if end.exit_code is not None else attempt.exit_code
    if budget == "UNCOUNTED":
        attempt.cause = EndCause.APP_ERROR.value
        attempt.reason = f"exit code {attempt.exit_code} of recover_on_exit_codes: restarted, uncounted"
