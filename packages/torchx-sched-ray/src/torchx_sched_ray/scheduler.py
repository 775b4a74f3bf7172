"""The ``ray`` scheduler: an app is one Ray job, submitted and managed through the Jobs API.

* **submit**: the job runs the driver (:mod:`torchx_sched_ray.torchx_ray_driver`), shipped
  with the app's description in ``runtime_env.py_modules``; the workspace (or the
  ``working_dir`` option) is the job's ``working_dir``. The app id carries the Jobs API
  address (``<host>:<port>-<submission id>``).
* **describe**: the job's status from the Jobs API, each replica's from the driver's
  records in the job log.
* **logs**: the replica's records in the job log (``tail_job_logs`` when following).
* **cancel**: ``stop_job`` (the driver stops every replica); **delete**: stop, then ``delete_job``.
* **recovery** (``capabilities.recovery``, used by ``torchx-managed``): the driver loops the
  attempts under the job's budgets and records them in the job log (see
  :mod:`torchx_sched_ray.recovery`).

``ray`` is imported only when the cluster is contacted (never for a dry run).
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.streams import Stream, filter_regex, split_lines, split_lines_iterator
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import AppDef
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import is_terminal

from torchx_sched_ray import status
from torchx_sched_ray.opts import RayOpts
from torchx_sched_ray.request import META_APP, RayJob, build_job, make_app_id, split_app_id, validate_app
from torchx_sched_ray.workspace import RayWorkspaceMixin

if TYPE_CHECKING:
    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

#: the driver package shipped with every job
DRIVER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchx_ray_driver")
#: seconds ``delete`` waits for a stopped job to end before deleting it
DELETE_WAIT = 30.0


class UnknownJobError(LookupError):
    """The Jobs API does not know the job."""


def _is_not_found(e: Exception) -> bool:
    return "status code 404" in str(e) or "does not exist" in str(e)


def _streams(streams: Stream | None) -> frozenset[str]:
    if streams is None or Stream(streams) == Stream.COMBINED:
        return frozenset({"stdout", "stderr"})
    return frozenset({Stream(streams).value})


class RayScheduler(RayWorkspaceMixin, Scheduler[Mapping[str, CfgVal], AppDef, RayJob]):
    """Runs apps as Ray jobs: one gang-placed actor per replica, each running the replica's command.

    Needs a Ray cluster with its dashboard (the Jobs API) reachable, and ``python`` on the
    cluster's PATH with Ray installed (as ``ray start`` sets up).
    """

    capabilities = SchedulerCapabilities(
        log_since_until=True, log_streams=frozenset({"stdout", "stderr", "combined"}), workspace=True, recovery=True
    )  # the rest: the defaults

    def __init__(self, session_name: str) -> None:
        super().__init__("ray", session_name)
        self._clients: dict[str, Any] = {}

    def close(self) -> None:
        """Removes workspace staging directories not submitted (e.g. after a dry run)."""
        self.remove_staged()

    def _client(self, address: str) -> Any:
        """The Jobs API client of ``address`` (one per address; imports ray on first use)."""
        if address not in self._clients:
            from ray.job_submission import JobSubmissionClient

            # Ray logs each package upload at INFO on stderr: keep the CLI's output to torchx's own
            for name in ("ray", "ray.dashboard.modules.dashboard_sdk"):
                logging.getLogger(name).setLevel(logging.WARNING)
            try:
                self._clients[address] = JobSubmissionClient(address)
            except ConnectionError as e:
                raise ConnectionError(
                    f"{e} Is the cluster's dashboard (Jobs API) up there? Point -cfg address=http://HOST:PORT"
                    " or $RAY_API_SERVER_ADDRESS at it."
                ) from e
        return self._clients[address]

    # ------------------------------------------------------------------ submitting
    def _run_opts(self) -> runopts:
        return RayOpts.as_runopts()

    def _working_dir(self, app: AppDef, opts: RayOpts) -> str | None:
        if opts.working_dir:
            return os.path.abspath(opts.working_dir)
        dirs = sorted({role.image for role in app.roles if role.image in self.staged})
        if len(dirs) > 1:
            raise ValueError(
                "the roles have different workspaces, but a Ray job ships one working_dir:"
                " give every role the same workspace, or set -cfg working_dir=DIR"
            )
        return dirs[0] if dirs else None

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[RayJob]:
        opts: RayOpts = RayOpts.from_cfg(cfg)
        opts.validate()
        validate_app(app)
        return AppDryRunInfo(build_job(app, opts, self._working_dir(app, opts)), str)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[RayJob]:
        """A job whose driver runs the attempts itself under ``policy``'s budgets (see
        :mod:`torchx_sched_ray.recovery`); the roles' ``max_retries`` is not used."""
        from torchx.schedulers.recovery import RECOVERY_MARK, policy_mark

        from torchx_sched_ray.recovery import policy_spec

        info = self._submit_dryrun(app, cfg)
        job = info.request
        job.spec["max_retries"] = 0
        job.spec["recovery"] = policy_spec(policy, job.submission_id)
        job.metadata[RECOVERY_MARK] = policy_mark(policy)
        return info

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts the job's driver recorded in its log; None for an unknown job, or one
        not submitted to recover (its metadata lacks :data:`~torchx.schedulers.recovery.RECOVERY_MARK`)."""
        from torchx.schedulers.recovery import RECOVERY_MARK

        from torchx_sched_ray.recovery import read_attempts

        try:
            client, sub, info = self._info(app_id)
        except UnknownJobError:
            return None
        if RECOVERY_MARK not in (info.metadata or {}):
            return None
        return read_attempts(split_lines(client.get_job_logs(sub)))

    def recovery_list(self) -> builtins.list[ListAppResponse]:
        """The jobs of :meth:`list` submitted to recover, picked by their metadata in the same
        ``list_jobs`` call (no further call per job)."""
        from torchx.schedulers.recovery import RECOVERY_MARK

        return self._list(None, lambda meta: RECOVERY_MARK in meta)

    def schedule(self, dryrun_info: AppDryRunInfo[RayJob]) -> str:
        """Submits the job (uploading the driver, ``app.json`` and the working dir); returns the app id."""
        job = dryrun_info.request
        try:
            with tempfile.TemporaryDirectory(prefix="torchx-ray-driver-") as tmp:
                package = os.path.join(tmp, "torchx_ray_driver")
                shutil.copytree(DRIVER_DIR, package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                with open(os.path.join(package, "app.json"), "w", encoding="utf-8") as f:
                    json.dump(job.spec, f)
                self._client(job.address).submit_job(
                    entrypoint=job.entrypoint,
                    submission_id=job.submission_id,
                    runtime_env={**job.runtime_env, "py_modules": [package]},
                    metadata=job.metadata,
                )
        finally:
            self.remove_staged()
        return job.app_id

    # ------------------------------------------------------------------ state
    def _info(self, app_id: str) -> tuple[Any, str, Any]:
        """(client, submission id, job details).

        Raises:
            UnknownJobError: the Jobs API does not know the job
        """
        address, sub = split_app_id(app_id)
        client = self._client(address)
        try:
            return client, sub, client.get_job_info(sub)
        except RuntimeError as e:
            if _is_not_found(e):
                raise UnknownJobError(f"ray job {sub} is unknown at {address}") from e
            raise

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state and each replica's (from the driver's records); None if the job is unknown."""
        try:
            client, sub, info = self._info(app_id)
        except UnknownJobError:
            return None
        logs = client.get_job_logs(sub)
        return status.describe(app_id, info.status, info.message or "", dict(info.metadata or {}), split_lines(logs))

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the job ended, from its status, Ray's message and the driver's records (see
        :mod:`torchx_sched_ray.causes`); None while it runs, or for an unknown job."""
        from torchx_sched_ray.causes import ray_end

        try:
            client, sub, info = self._info(app_id)
        except UnknownJobError:
            return None
        state = str(getattr(info.status, "value", info.status)).upper()
        if state not in ("STOPPED", "SUCCEEDED", "FAILED"):
            return None
        return ray_end(state, info.message or "", split_lines(client.get_job_logs(sub)))

    def exists(self, app_id: str) -> bool:
        """True if the Jobs API knows the job."""
        try:
            self._info(app_id)
        except UnknownJobError:
            return False
        return True

    def wait(self, app_id: str, timeout: float | None = None, poll_interval: float = 1.0) -> DescribeAppResponse | None:
        """Polls the job's status (not its log) until it ends or ``timeout`` passes; then describes it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = min(0.1, poll_interval)
        try:
            client, sub, _ = self._info(app_id)
        except UnknownJobError:
            return None
        while deadline is None or time.monotonic() < deadline:
            if is_terminal(status.job_state(client.get_job_status(sub))):
                break
            time.sleep(delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, poll_interval)
        return self.describe(app_id)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The torchx jobs the cluster (``address`` of ``cfg`` or the default) knows."""
        return self._list(cfg)

    def _list(
        self, cfg: Mapping[str, CfgVal] | None, keep: Callable[[dict[str, str]], bool] | None = None
    ) -> builtins.list[ListAppResponse]:
        """The torchx jobs (of those, the ones whose metadata ``keep`` takes)."""
        opts: RayOpts = RayOpts.from_cfg(cfg or {})
        opts.validate()
        address = opts.jobs_address()
        out = []
        for job in self._client(address).list_jobs():
            meta = dict(job.metadata or {})
            if job.submission_id and META_APP in meta and (keep is None or keep(meta)):
                app_id = make_app_id(address, job.submission_id)
                state = status.job_state(job.status)
                submitted, started, ended = status.job_times(state, job.start_time, job.end_time)
                out.append(
                    ListAppResponse(
                        app_id, state, name=meta[META_APP], submitted=submitted, started=started, ended=ended
                    )
                )
        return out

    # ------------------------------------------------------------------ stopping
    def _cancel_existing(self, app_id: str) -> None:
        client, sub, _ = self._info(app_id)
        client.stop_job(sub)

    def _delete_existing(self, app_id: str) -> None:
        """Stops the job, waits for it to end, and deletes it (its logs stay on the cluster's disk)."""
        client, sub, info = self._info(app_id)
        if not is_terminal(status.job_state(info.status)):
            client.stop_job(sub)
            deadline = time.monotonic() + DELETE_WAIT
            while not is_terminal(status.job_state(client.get_job_status(sub))):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"ray job {sub} did not stop within {DELETE_WAIT:.0f} s; delete it again later")
                time.sleep(0.2)
        client.delete_job(sub)

    # ------------------------------------------------------------------ logs
    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines replica ``k`` of ``role_name`` printed (every attempt's), stdout and stderr by default.

        Raises:
            ValueError: the app or the replica is unknown
        """
        try:
            client, sub, info = self._info(app_id)
        except UnknownJobError as e:
            raise ValueError(str(e)) from e
        index = 0
        for name, n in status.roles_of(dict(info.metadata or {})):
            if name == role_name and 0 <= k < n:
                index += k
                break
            index += n
        else:
            raise ValueError(f"ray job {sub} has no replica {role_name}/{k}")
        lines: Iterable[str] = self._tail(client, sub) if should_tail else split_lines(client.get_job_logs(sub))
        out = status.replica_lines(lines, index, _streams(streams), since, until)
        return filter_regex(regex, out) if regex else out

    def _tail(self, client: Any, sub: str) -> Iterator[str]:
        """The job log's lines, following it until the job ends (``tail_job_logs``, driven synchronously)."""
        import asyncio

        loop = asyncio.new_event_loop()
        chunks = client.tail_job_logs(sub)

        def pieces() -> Iterator[str]:
            while True:
                try:
                    yield loop.run_until_complete(chunks.__anext__())
                except StopAsyncIteration:
                    return

        try:
            yield from split_lines_iterator(pieces())
        finally:
            loop.run_until_complete(chunks.aclose())
            loop.close()


def create_scheduler(session_name: str, **kwargs: Any) -> RayScheduler:
    """The ``ray`` scheduler (no constructor options)."""
    return RayScheduler(session_name)
