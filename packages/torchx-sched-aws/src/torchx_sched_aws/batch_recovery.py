"""Recovery inside AWS Batch (``capabilities.recovery``, used by ``torchx-managed``): a
:class:`~torchx.schedulers.recovery.RecoveryPolicy` compiled into the job definition's
``retryStrategy``, and the attempts read back from ``describe_jobs`` (pure, no AWS calls).

Batch retries a failed job as a whole, up to ``retryStrategy.attempts`` runs in all (at most
10), deciding by ``evaluateOnExit`` (at most 5 rules, the first that matches wins; a job no rule
matches is retried, so the last rule sends every other end to ``EXIT``):

* ``max_recoveries > 0``: ``RETRY`` when the attempt's status reason starts with ``Host EC2``
  (the instance went away: a hardware failure, a Spot reclaim on EC2 capacity) or ``Your Spot
  Task`` (Fargate Spot took the capacity back).
* ``max_restarts > 0``: ``RETRY`` on every exit code (``onExitCode: *``); else ``RETRY`` on
  each exit code of ``recover_on_exit_codes`` (at most 2 of them with ``max_recoveries > 0``,
  4 without: one rule each).
* anything else: ``EXIT``.

Batch counts every retry in one budget, which is how budgets are approximated:
``attempts = 1 + max_restarts + max_recoveries`` (capped at 10); with
``recover_on_exit_codes`` (uncounted in torchx) it is 10. So an application error may be
retried more than ``max_restarts`` times when no host was lost (up to ``attempts - 1``), and a
lost host fewer than ``max_recoveries`` times after application errors. Batch cannot wait
between attempts: a policy with ``restart_backoff`` is refused.

Every container runs as ``/bin/sh -c 'export TORCHX_ATTEMPT=...; exec "$0" "$@"' COMMAND...``:
``TORCHX_ATTEMPT`` is ``AWS_BATCH_JOB_ATTEMPT - 1`` (Batch counts from 1; ``0`` where it is not
set), the script holds no user value (the command follows it as arguments), and
``TORCHX_CHECKPOINT_DIR`` is a plain environment variable. Without a ``checkpoint_dir`` it is
``/tmp/torchx-checkpoints/<job name>`` inside the container, which no later attempt sees: give
one on a mount every attempt has (an EFS volume, a host path of the compute environment).

The job and its definition are tagged :data:`~torchx.schedulers.recovery.RECOVERY_MARK` (the
budgets, :func:`~torchx.schedulers.recovery.policy_mark`): ``describe_jobs`` returns a job's tags,
so ``recovery_attempts`` and ``recovery_list`` tell such a job from a plain one, from any machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx.schedulers.recovery import RECOVERY_MARK, AttemptLog, RecoveredAttempt, RecoveryPolicy, policy_mark

from torchx_sched_aws._common import tag_text
from torchx_sched_aws.batch_causes import batch_end
from torchx_sched_aws.batch_request import MAX_ATTEMPTS, BatchJob

#: Batch's ``statusReason`` of an attempt whose host went away (EC2) or was taken back (Fargate Spot)
HOST_LOST = ("Host EC2*", "Your Spot Task*")
#: most ``evaluateOnExit`` rules Batch takes
MAX_RULES = 5
#: the attempt number Batch gives each run of the job (1, 2, ...)
ATTEMPT_ENV = "AWS_BATCH_JOB_ATTEMPT"
#: the wrapper every container runs its command through: no user value is in it
WRAPPER = f'export TORCHX_ATTEMPT=$((${{{ATTEMPT_ENV}:-1}} - 1)); exec "$0" "$@"'
#: TORCHX_CHECKPOINT_DIR's parent when the policy names none (inside the container)
DEFAULT_CHECKPOINT_ROOT = "/tmp/torchx-checkpoints"


class PolicyError(ValueError):
    """The policy cannot be expressed by Batch's retry strategy (the message says why)."""


def retry_strategy(policy: RecoveryPolicy) -> dict[str, Any]:
    """The job definition's ``retryStrategy`` for ``policy`` (see the module docstring).

    Raises:
        PolicyError: ``restart_backoff`` is set, or too many ``recover_on_exit_codes`` for
            Batch's five rules
    """
    if policy.restart_backoff is not None and policy.restart_backoff > 0:
        raise PolicyError("aws_batch cannot wait between attempts; drop restart_backoff or use controller=local")
    rules: list[dict[str, str]] = []
    if policy.max_recoveries > 0:
        rules += [{"onStatusReason": reason, "action": "RETRY"} for reason in HOST_LOST]
    codes = sorted(set(policy.recover_on_exit_codes))
    if policy.max_restarts > 0:
        rules.append({"onExitCode": "*", "action": "RETRY"})
    else:
        room = MAX_RULES - len(rules) - 1
        if len(codes) > room:
            raise PolicyError(
                f"aws_batch can retry on at most {room} exit codes of recover_on_exit_codes (Batch takes"
                f" {MAX_RULES} retry rules), not {len(codes)}; give fewer, or max_restarts>0, or use controller=local"
            )
        rules += [{"onExitCode": str(c), "action": "RETRY"} for c in codes]
    rules.append({"onReason": "*", "action": "EXIT"})
    if codes:
        attempts = MAX_ATTEMPTS
    else:
        attempts = min(MAX_ATTEMPTS, 1 + max(policy.max_restarts, 0) + max(policy.max_recoveries, 0))
    return {"attempts": attempts, "evaluateOnExit": rules}


def _wrap(container: dict[str, Any], checkpoint_dir: str) -> None:
    container["command"] = ["/bin/sh", "-c", WRAPPER, *container["command"]]
    env = [e for e in container.get("environment") or [] if e["name"] != "TORCHX_CHECKPOINT_DIR"]
    container["environment"] = [*env, {"name": "TORCHX_CHECKPOINT_DIR", "value": checkpoint_dir}]


def recover(job: BatchJob, policy: RecoveryPolicy) -> BatchJob:
    """``job`` (from :func:`~torchx_sched_aws.batch_request.build_job`) made to recover by
    ``policy``: its retry strategy replaced, every container's command wrapped, the job and
    its definition tagged :data:`~torchx.schedulers.recovery.RECOVERY_MARK`.

    Raises:
        PolicyError: Batch cannot express the policy (see :func:`retry_strategy`)
    """
    definition = job.job_definition
    definition["retryStrategy"] = retry_strategy(policy)
    mark = {RECOVERY_MARK: tag_text(policy_mark(policy))}
    definition["tags"] = {**definition.get("tags", {}), **mark}
    job.submit["tags"] = {**job.submit.get("tags", {}), **mark}
    ckpt = policy.checkpoint_dir or f"{DEFAULT_CHECKPOINT_ROOT}/{job.name}"
    if "nodeProperties" in definition:
        for rng in definition["nodeProperties"]["nodeRangeProperties"]:
            _wrap(rng["container"], ckpt)
    else:
        _wrap(definition["containerProperties"], ckpt)
    return job


def is_marked(job: Mapping[str, Any]) -> bool:
    """True for the description of a job :func:`recover` made (its tags hold the mark)."""
    return RECOVERY_MARK in (job.get("tags") or {})


def _seconds(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, int | float) and ms > 0 else None


def attempts_of(job: Mapping[str, Any], cancel_reason: str) -> AttemptLog:
    """The attempts of a job from its ``describe_jobs`` description: each of ``attempts[]``
    (ended ones named by :func:`~torchx_sched_aws.batch_causes.batch_end` of that attempt
    alone), then the run under way, if Batch has not listed it yet. The last attempt of an ended
    job takes the job's own end (its status reason, a cancel)."""
    status = str(job.get("status", ""))
    ended = status in ("SUCCEEDED", "FAILED")
    listed = [dict(a) for a in job.get("attempts") or []]
    log = AttemptLog()
    for n, raw in enumerate(listed):
        last = n == len(listed) - 1
        attempt = RecoveredAttempt(n, started=_seconds(raw.get("startedAt")), ended=_seconds(raw.get("stoppedAt")))
        if last and ended:
            _end(attempt, batch_end(job, cancel_reason), status)
        elif attempt.ended is not None or not last:
            _end(attempt, batch_end({"status": "FAILED", "attempts": [raw]}, cancel_reason), "FAILED")
        log.attempts.append(attempt)
    running = status in ("RUNNING", "STARTING") and (not log.attempts or log.attempts[-1].state is not None)
    if running:
        log.attempts.append(RecoveredAttempt(len(log.attempts), started=_seconds(job.get("startedAt"))))
    if ended:
        log.final = status
    return log


def _end(attempt: RecoveredAttempt, end: AttemptEnd | None, status: str) -> None:
    attempt.state = status
    if status == "SUCCEEDED" or end is None:
        attempt.exit_code = 0 if status == "SUCCEEDED" else None
        return
    attempt.exit_code, attempt.cause, attempt.reason = end.exit_code, end.cause.value, end.reason
    if end.cause == EndCause.CANCELLED:
        attempt.state = "CANCELLED"
