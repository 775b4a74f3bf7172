"""Managed jobs that recover inside their one target: no journal, no driver, nothing on the
submitting machine.

The job's app id is ``<target>:<the target's app id>`` (``managed://torchx/slurm:4242``), so
the handle alone finds it: every verb asks the target, from any machine that reaches it. The
target compiles the job's budgets into its own mechanisms
(:meth:`~torchx.schedulers.Scheduler.submit_recovery_dryrun`) and reads its attempts back from
its own records (:meth:`~torchx.schedulers.Scheduler.recovery_attempts`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse
from torchx.schedulers.recovery import RecoveryPolicy
from torchx.specs.handles import make_app_handle
from torchx.specs.status import AppState, is_terminal

from torchx_managed.options import ManagedOptions

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.schedulers.api import Scheduler
    from torchx.schedulers.recovery import AttemptLog

#: separates the target's name from its app id in a native job's app id
SEP = ":"


def is_native(app_id: str) -> bool:
    """True for the app id of a job that recovers inside its target (``slurm:4242``; not a
    journal-kept ``ID@ROOT``, whose ROOT may hold any character)."""
    return SEP in app_id.partition("@")[0]


def native_id(target: str, target_app_id: str) -> str:
    """The managed app id of the target's job ``target_app_id``."""
    return f"{target}{SEP}{target_app_id}"


def split_id(app_id: str) -> tuple[str, str]:
    """``(target, target app id)`` of a native job's app id."""
    target, _, own = app_id.partition(SEP)
    return target, own


def policy_of(opts: ManagedOptions, checkpoint_dir: str | None) -> RecoveryPolicy:
    """The job's budgets as the target's recovery policy."""
    return RecoveryPolicy(
        max_restarts=opts.max_restarts,
        max_recoveries=opts.max_recoveries,
        recover_on_exit_codes=tuple(opts.recover_on_exit_codes),
        checkpoint_dir=checkpoint_dir,
        restart_backoff=opts.restart_backoff,
    )


def why_not_native(opts: ManagedOptions, sched: Scheduler[Any, Any, Any]) -> str | None:
    """Why the job cannot recover inside its target (None: it can)."""
    if len(opts.targets) > 1:
        return "failover across several targets needs a controller"
    if not sched.capabilities.recovery:
        return f"scheduler {opts.targets[0]!r} cannot recover jobs by itself"
    if opts.notify:
        return "notify needs a controller (the target sends no notifications)"
    return None


def wants_native(opts: ManagedOptions, sched: Scheduler[Any, Any, Any]) -> bool:
    """Whether the job recovers inside its target (``controller``: auto, native or local).

    Raises:
        InvalidRunConfigException: ``controller=native`` for a job that cannot
    """
    if opts.controller not in ("auto", "native"):  # local, or a controller job
        return False
    reason = why_not_native(opts, sched)
    if reason is None:
        return True
    if opts.controller == "native":
        from torchx.specs.runopts import InvalidRunConfigException

        raise InvalidRunConfigException(
            f"managed: controller=native: {reason}; use controller=local (a driver on this machine)", "controller"
        )
    return False


def attempts_json(
    handle: str, target: str, log: AttemptLog | None, desc: DescribeAppResponse, end_cause: str | None
) -> list[dict[str, Any]]:
    """The attempts as ``torchx status --json`` shows them; the last one, if the log has no end
    for it, takes the job's state (and ``end_cause`` once the job ended)."""
    if log is None:
        return []
    out = []
    for attempt in log.attempts:
        if attempt.state is None and is_terminal(desc.state):
            attempt.state = desc.state.name
            if desc.state != AppState.SUCCEEDED:
                attempt.cause = end_cause
            attempt.reason = attempt.reason or desc.msg
        live = None if attempt.state is not None else desc.state.name
        out.append(attempt.as_json(handle, target, live))
    return out


def describe(runner: Runner, session: str, app_id: str) -> DescribeAppResponse | None:
    """The job as its target reports it, with ``metadata["attempts"]``; None if unknown."""
    target, own = split_id(app_id)
    sched = runner.get_scheduler(target)
    desc = sched.describe(own)
    if desc is None:
        return None
    log = sched.recovery_attempts(own)
    end_cause = None
    if is_terminal(desc.state) and desc.state != AppState.SUCCEEDED:
        end = sched.end_cause(own)
        end_cause = None if end is None else end.cause.value
    handle = make_app_handle(target, session, own)
    attempts = attempts_json(handle, target, log, desc, end_cause)
    msg = desc.msg
    if log is not None and log.backoff_until is not None and not is_terminal(desc.state):
        left = max(0.0, log.backoff_until - time.time())
        last = log.attempts[-1] if log.attempts else None
        after = f" after {last.cause} (exit code {last.exit_code})" if last is not None and last.cause else ""
        msg = f"restarting in {left:.0f}s{after} (restart_backoff)"
    return DescribeAppResponse(
        app_id=app_id,
        state=desc.state,
        num_restarts=max(len(attempts) - 1, 0),
        msg=msg,
        structured_error_msg=desc.structured_error_msg,
        ui_url=desc.ui_url,
        metadata={**desc.metadata, "attempts": attempts, "targets": [target], "controller": "native"},
        roles_statuses=list(desc.roles_statuses),
        roles=list(desc.roles),
    )
