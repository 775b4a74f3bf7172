"""Submitting one attempt of a managed job, and reading how it ended."""

from __future__ import annotations

import base64
import json
import logging
import pickle
from typing import TYPE_CHECKING, Any

from torchx.schedulers.causes import AttemptEnd, EndCause, cause_from_state, signal_end
from torchx.specs.handles import parse_app_handle
from torchx.specs.roles import AppDef
from torchx.specs.status import AppState
from torchx.util.record import deep_copy

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.schedulers.api import DescribeAppResponse
    from torchx.specs.dryrun import AppDryRunInfo

logger: logging.Logger = logging.getLogger("torchx_managed")

#: the attempt number (0, 1, 2, ...) in every replica's environment
ENV_ATTEMPT = "TORCHX_ATTEMPT"
#: the job's checkpoint directory (the same for every attempt) in every replica's environment
ENV_CHECKPOINT_DIR = "TORCHX_CHECKPOINT_DIR"


def attempt_name(job_id: str, n: int) -> str:
    """The app name of attempt ``n`` (unique: a driver that restarts finds it in the target's list)."""
    return f"{job_id}-{n}"


def attempt_app(app: AppDef, job_id: str, n: int, checkpoint_dir: str) -> AppDef:
    """A copy of ``app`` for attempt ``n``: its name, and TORCHX_ATTEMPT / TORCHX_CHECKPOINT_DIR in every role."""
    copy = deep_copy(app)
    copy.name = attempt_name(job_id, n)
    for role in copy.roles:
        role.env = {**role.env, ENV_ATTEMPT: str(n), ENV_CHECKPOINT_DIR: checkpoint_dir}
    return copy


def dump_app(app: AppDef) -> str:
    """``app`` as text for the job's spec (pickled: roles may be subclasses with their own hooks)."""
    return base64.b64encode(pickle.dumps(app)).decode()


def load_app(text: str) -> AppDef:
    """The inverse of :func:`dump_app`."""
    app: AppDef = pickle.loads(base64.b64decode(text))
    return app


def dryrun_attempt(
    runner: Runner, app: AppDef, spec: dict[str, Any], n: int, target: str, checkpoint_dir: str
) -> AppDryRunInfo[Any]:
    """The request of attempt ``n`` on ``target`` (its run options from the job's spec)."""
    cfg = dict(spec["options"]["target_cfgs"].get(target) or {})
    return runner.dryrun(
        attempt_app(app, spec["id"], n, checkpoint_dir), target, cfg or None, parent_run_id=spec["handle"]
    )


def exit_code_of(desc: DescribeAppResponse) -> int | None:
    """The first non-zero exit code the replicas' error messages report (torchx's error-file
    JSON: ``{"exit_code": N, ...}`` or ``{"message": {"extraInfo": {"exit_code": N}}}``)."""
    for role in desc.roles_statuses:
        for replica in role.replicas:
            try:
                data = json.loads(replica.structured_error_msg)
            except (TypeError, ValueError):
                continue
            if not isinstance(data, dict):
                continue
            code = data.get("exit_code")
            if code is None and isinstance(data.get("message"), dict):
                code = (data["message"].get("extraInfo") or {}).get("exit_code")
            if isinstance(code, int) and code != 0:
                return code
    return None


def end_of(runner: Runner, handle: str, desc: DescribeAppResponse | None) -> AttemptEnd:
    """Why the attempt ``handle`` ended: its scheduler's :meth:`~torchx.schedulers.Scheduler.end_cause`,
    else :func:`~torchx.schedulers.causes.cause_from_state`."""
    if desc is None:
        return AttemptEnd(EndCause.UNKNOWN, None, "the scheduler no longer knows the attempt")
    parsed = parse_app_handle(handle)
    try:
        found = runner.get_scheduler(parsed.scheduler_backend).end_cause(parsed.app_id)
    except Exception as e:  # a scheduler that cannot tell: the state says what it can
        logger.warning("cannot get why %s ended: %s", handle, e)
        found = None
    if found is not None:
        return found
    code = 0 if desc.state == AppState.SUCCEEDED else exit_code_of(desc)
    fallback = cause_from_state(desc.state, code)
    if fallback.cause == EndCause.APP_ERROR and code is not None and code < 0:
        return signal_end(-code)  # torchx's -N: ended by signal N, which torchx did not send (a cancel is CANCELLED)
    return AttemptEnd(fallback.cause, fallback.exit_code, desc.msg or fallback.reason)
