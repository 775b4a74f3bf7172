"""The ``managed`` scheduler: runs an app on other installed schedulers ("targets") and keeps it
going until it succeeds, is cancelled or uses up its budgets.

``schedule`` records the job (:mod:`torchx_managed.journal`), submits its first attempt itself
(so the app starts as fast as on the target directly) and hands the job's driver lock to a
detached driver (:mod:`torchx_managed.driver`) that watches the attempt and runs the next ones.
``describe``/``status``/``wait``/``log`` read the journal, ask the running attempt's target
about it, and start the driver again when it died before the job ended (resume on look).

A job with one target that can recover by itself (``controller=auto|native``) is instead
compiled into that target's own mechanisms (:mod:`torchx_managed.native`): no journal, no
driver, and its handle alone finds it from any machine.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, UnsupportedFeatureError
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.streams import Stream
from torchx.schedulers.submission import recovery_dryrun
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.handles import make_app_handle, parse_app_handle
from torchx.specs.roles import AppDef, RetryPolicy
from torchx.specs.runopts import CfgVal, InvalidRunConfigException, runopts
from torchx.specs.status import AppState, is_terminal
from torchx.util import journal
from torchx.util.durable import DriverStartError, RecordError, UnknownJobError, UnsafeJobError, record_error

from torchx_managed import controller, controller_record, native, options
from torchx_managed.attempts import attempt_name, dryrun_attempt, dump_app, load_app
from torchx_managed.journal import Attempt, JobState, ManagedStore, locate, located_id, restart_at
from torchx_managed.journal_store import is_url

if TYPE_CHECKING:
    from datetime import datetime

    from torchx.runner import Runner

logger: logging.Logger = logging.getLogger("torchx_managed")

#: how long ``cancel`` waits for the driver to stop the running attempt and end the job
CANCEL_TIMEOUT = 300.0


@dataclass
class ManagedRequest:
    """What ``schedule`` records and submits: the job's spec and its first attempt's request."""

    job_id: str
    spec: dict[str, Any]
    first: AppDryRunInfo[Any]
    native: bool = False
    #: the target of the first attempt: the first whose dry run passed
    target: str = ""
    #: targets whose dry run failed, and why (not tried for the first attempt)
    skipped: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        opts = self.spec["options"]
        if self.native:
            return (
                f"managed job recovering inside {opts['targets'][0]} (no controller): max_restarts="
                f"{opts['max_restarts']}, max_recoveries={opts['max_recoveries']}, recover_on_exit_codes="
                f"{opts['recover_on_exit_codes']}, checkpoint_dir={self.spec['checkpoint_dir']}\n{self.first}"
            )
        return (
            f"managed job {self.job_id}: targets {', '.join(opts['targets'])}; max_restarts={opts['max_restarts']},"
            f" max_recoveries={opts['max_recoveries']}, recover_on_exit_codes={opts['recover_on_exit_codes']},"
            f" pending_timeout={opts['pending_timeout']}, checkpoint_dir={self.spec['checkpoint_dir']},"
            f" notify={opts['notify']}\n"
            + "".join(f"skipped {t} (its dry run failed: {why})\n" for t, why in self.skipped.items())
            + f"attempt 0 on {self.target or opts['targets'][0]}:\n{self.first}"
        )


def new_job_id(name: str) -> str:
    """``<app name>-<8 hex>`` (the name cut to 32 characters of ``[a-z0-9-]``)."""
    base = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:32] or "managed"
    return f"{base}-{uuid.uuid4().hex[:8]}"


class ManagedScheduler(Scheduler[dict[str, Any], AppDef, ManagedRequest]):
    """Keeps an app running on its targets until it succeeds (see the module docstring).

    Args:
        session_name: the session (part of handles ``managed://SESSION/ID``)
        state_dir: where managed jobs are kept (default ``$TORCHX_MANAGED_STATE_DIR``)
    """

    capabilities = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        log_streams=frozenset({"stdout", "stderr", "combined"}),
        logs=True,
        list=True,
        cancel=True,
        delete=True,
        retry_policies=frozenset(RetryPolicy),  # the target decides (it checks the app again)
        elastic=True,
        mounts=frozenset({"bind", "volume", "device"}),
    )

    def __init__(self, session_name: str, state_dir: str | None = None) -> None:
        super().__init__(options.SCHEDULER, session_name)
        self.store = ManagedStore(state_dir)
        self._runner_: Runner | None = None
        self._no_driver: dict[str, str] = {}  # job id -> why its driver could not be started by this look
        # job id -> the problem recorded when this look started its driver again: the new driver
        # blanks it at once and records its own if it meets it again, so this look reports it
        self._problem_at_start: dict[str, str] = {}

    @property
    def _runner(self) -> Runner:
        """The runner that talks to the targets (made on first use)."""
        if self._runner_ is None:
            from torchx.runner import Runner

            self._runner_ = Runner(self.session_name)
        return self._runner_

    def close(self) -> None:
        """Closes the targets' schedulers this one opened."""
        if self._runner_ is not None:
            self._runner_.close()

    def _run_opts(self) -> runopts:
        return options.run_opts()

    # ------------------------------------------------------------------ submitting
    def _validate(self, app: AppDef, scheduler: str, cfg: dict[str, Any] | None = None) -> None:
        """Nothing here: each target checks the app when its attempt is dry-run (attempt 0 in :meth:`_submit_dryrun`)."""

    def _submit_dryrun(self, app: AppDef, cfg: dict[str, Any]) -> AppDryRunInfo[ManagedRequest]:
        from torchx.schedulers import get_scheduler_factories

        runner = self._runner
        opts, unknown = options.check(cfg, get_scheduler_factories(), runner.scheduler_run_opts)
        if unknown:
            logger.warning(
                "torchx: warning: ignoring run option(s) no target of managed declares: %s;"
                " `torchx runopts TARGET` lists a target's options",
                ", ".join(repr(k) for k in unknown),
            )
        try:
            target = runner.get_scheduler(opts.targets[0])
        except Exception:  # its plugin cannot load here (a missing SDK): the dry runs below say so
            target = None
        if target is not None and native.wants_native(opts, target):
            info = runner.dryrun(app, opts.targets[0], opts.target_cfgs.get(opts.targets[0]) or None)
            try:
                request = recovery_dryrun(target, info, native.policy_of(opts, opts.checkpoint_dir))
            except UnsupportedFeatureError as e:
                if opts.controller == "native":
                    raise
                # auto: the target cannot express this job (its app, options or budgets)
                logger.warning("torchx: managed: this job recovers through a driver on this machine: %s", e)
            else:
                shown = {"options": opts.as_json(), "checkpoint_dir": opts.checkpoint_dir or "next to the job's logs"}
                return AppDryRunInfo(ManagedRequest("", shown, request, native=True), str)
        job_id = new_job_id(app.name)
        app_id = located_id(job_id, opts.journal)
        handle = make_app_handle(self.backend, self.session_name, app_id)
        ckpt = opts.checkpoint_dir or os.path.join(self.store.job_dir(app_id), "checkpoints")
        spec: dict[str, Any] = {
            "id": job_id,
            "handle": handle,
            "session": self.session_name,
            "name": app.name,
            "cwd": os.getcwd(),
            "created": time.time(),
            "options": opts.as_json(),
            "checkpoint_dir": ckpt,
            "app": dump_app(app),
        }
        first: tuple[str, AppDryRunInfo[Any]] | None = None
        skipped: dict[str, str] = {}
        for name in opts.targets:  # every target up front: one that cannot run here is skipped, said why
            try:
                info = dryrun_attempt(runner, app, spec, 0, name, ckpt)
            except InvalidRunConfigException as e:  # bad input: the user fixes the command
                raise InvalidRunConfigException(f"managed target {name}: {_first_line(e)}") from None
            except Exception as e:  # this environment cannot run it there (a missing SDK, ...)
                if len(opts.targets) == 1:
                    raise  # its own error, as on the target directly
                skipped[name] = _first_line(e)
                continue
            first = first or (name, info)
        if first is None:
            raise RuntimeError(
                "managed: no target can run this job here: " + "; ".join(f"{t}: {why}" for t, why in skipped.items())
            )
        for name, why in skipped.items():
            logger.warning("torchx: warning: managed: skipping target %s, its dry run failed: %s", name, why)
        if skipped:
            spec["skipped"] = skipped
        return AppDryRunInfo(ManagedRequest(app_id, spec, first[1], target=first[0], skipped=skipped), str)

    def schedule(self, dryrun_info: AppDryRunInfo[ManagedRequest]) -> str:
        """Records the job, submits its first attempt and starts its driver; returns the job id.

        Raises:
            Exception: the first attempt could not be submitted (nothing is left behind)
        """
        req = dryrun_info.request
        job_id, spec = req.job_id, req.spec
        target = req.target or spec["options"]["targets"][0]
        if req.native:  # the target keeps the job: nothing is recorded or started here
            return native.native_id(target, parse_app_handle(self._runner.schedule(req.first)).app_id)
        try:
            self.store.create(job_id, spec)  # on a full disk: nothing of it is left
        except OSError as e:
            raise RecordError(f"managed job {job_id}", e) from None
        lock = self.store.take_driver_lock(job_id, own=False)
        assert lock is not None  # a new job: nobody else has its lock
        try:
            try:
                local_ckpt = _local_path(str(spec["checkpoint_dir"]))
                if local_ckpt is not None:  # default or given: made here; a remote URL is the app's to make
                    os.makedirs(local_ckpt, exist_ok=True)
                first = journal.RunSubmitting(0, attempt_name(spec["id"], 0), target, time.time())
                self.store.append(job_id, journal.record(first), sync=True)
                cluster = _cluster_controller(spec)
                if cluster is not None:  # first: a controller that cannot be started submits nothing
                    opts = options.ManagedOptions.from_json(spec["options"])
                    look = controller.ensure(self._runner, cluster, locate(job_id, self.store.root)[0], opts)
                    if look.problem:  # the job is kept: the controller is submitted again after its back-off
                        logger.warning("torchx: warning: managed job %s: %s", job_id, look.problem)
                n, handle = self._submit_first(job_id, spec, req)
            except BaseException as e:
                self.store.remove(job_id)
                if isinstance(e, OSError) and e.filename and e.filename.startswith(self.store.job_dir(job_id)):
                    raise RecordError(f"managed job {job_id}", e) from None  # a full disk
                raise
            try:
                self.store.append(job_id, journal.record(journal.RunSubmitted(n, handle, time.time())), sync=True)
            except OSError as e:  # the attempt runs: its driver finds it by name and records it once it can
                what = record_error(f"the start of attempt {n} ({handle})", e)
                logger.warning("torchx: warning: managed job %s: %s; its driver records it once it can", job_id, what)
            if cluster is not None:  # the controller takes the job's lock once this one lets go
                return job_id
            try:
                self.store.spawn(job_id, self._driver_argv(job_id, lock), cwd=spec["cwd"], lock_fd=lock)
            except OSError as e:  # the attempt runs: the next look at the job starts its driver
                logger.warning("managed job %s: cannot start its driver yet (%s); `torchx status` starts it", job_id, e)
        finally:
            self.store.release_driver_lock(lock)
        return job_id

    def _submit_first(self, job_id: str, spec: dict[str, Any], req: ManagedRequest) -> tuple[int, str]:
        """Submits the first attempt (its ``submitting`` event is journaled); a submission that
        fails is journaled as an attempt that ended ``NO_CAPACITY`` and the job fails over to the
        next target whose dry run passed; returns the attempt's number and handle.

        Raises:
            Exception: no target took it: the target's own error when it was the only one tried,
                else one line naming each target's
        """
        targets: list[str] = list(spec["options"]["targets"])
        reasons = {t: f"dry run failed: {why}" for t, why in req.skipped.items()}
        n, target = 0, req.target or targets[0]
        info: AppDryRunInfo[Any] | None = req.first
        while True:
            try:
                if info is None:
                    ckpt = str(spec["checkpoint_dir"])
                    info = dryrun_attempt(self._runner, load_app(spec["app"]), spec, n, target, ckpt)
                return n, self._runner.schedule(info)
            except Exception as e:
                error: Exception = e
            reasons[target] = f"submission failed: {_first_line(error)}"
            later = [t for t in targets[targets.index(target) + 1 :] if t not in req.skipped]
            if not later:
                if len(reasons) == 1:
                    raise error
                raise RuntimeError(
                    "managed: no target took the job: "
                    + "; ".join(f"{t}: {reasons[t]}" for t in targets if t in reasons)
                ) from error
            logger.warning(
                "torchx: warning: managed: attempt %d could not be submitted to %s (%s); failing over to %s",
                n,
                target,
                _first_line(error),
                later[0],
            )
            now = time.time()
            self.store.append(
                job_id,
                journal.record(journal.RunEnded(n, "FAILED", f"submission failed: {error}", "NO_CAPACITY", t=now)),
                journal.record(journal.RunSubmitting(n + 1, attempt_name(spec["id"], n + 1), later[0], now)),
                sync=True,
            )
            n, target, info = n + 1, later[0], None

    def _driver_argv(self, job_id: str, lock_fd: int | None = None) -> list[str]:
        root, own = locate(job_id, self.store.root)
        argv = ["-m", "torchx_managed.driver", root, own]
        return [*argv, "--lock-fd", str(lock_fd)] if lock_fd is not None else argv

    # ------------------------------------------------------------------ state
    def _load(self, job_id: str, resume: bool = True) -> JobState | None:
        """The job's state (None if unknown); starts its driver again if it died before the end."""
        try:
            state = self.store.load(job_id)
        except UnknownJobError:
            return None
        if not resume or state.final is not None:
            return state
        cluster = _cluster_controller(state.spec)
        if cluster is not None:
            problem = ""
            if self.store.driver_pid(job_id) is None:
                root = locate(job_id, self.store.root)[0]
                problem = controller.ensure(self._runner, cluster, root, state.options).problem
            if problem:  # nothing drives the job until a controller can: the look says why
                self._no_driver[job_id] = f"nothing drives the job: {problem}"
            else:
                self._no_driver.pop(job_id, None)
            return state
        before = self.store.problem(job_id) if self.store.driver_pid(job_id) is None else ""
        try:
            if self.store.resume(job_id, self._driver_argv(job_id), False, state.spec.get("cwd")):
                logger.info("managed job %s: its driver had stopped; started it again", job_id)
                if before:
                    self._problem_at_start[job_id] = before
        except UnsafeJobError:
            raise
        except OSError as e:  # nothing drives the job: the look says why
            self._no_driver[job_id] = f"nothing drives the job: its driver cannot be started: {e}"
        except DriverStartError as e:  # it started and died before taking the lock (an import error, ...)
            self._no_driver[job_id] = str(e)
        else:
            self._no_driver.pop(job_id, None)
        return state

    def exists(self, app_id: str) -> bool:
        """True if the job is stored here (or, recovering inside its target, the target knows it)."""
        if native.is_native(app_id):
            target, own = native.split_id(app_id)
            return self._runner.get_scheduler(target).exists(own)
        try:
            self.store.read_spec(app_id)
        except UnknownJobError:
            return False
        return True

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state, one entry per attempt in ``metadata["attempts"]`` (handle, scheduler,
        state, cause, exit_code, started, ended), the running attempt's replicas; None if unknown."""
        if native.is_native(app_id):
            return native.describe(self._runner, self.session_name, app_id)
        state = self._load(app_id)
        if state is None:
            return None
        last = state.last
        live = None  # the last attempt's own description
        unreachable = ""  # why the last attempt's scheduler did not answer
        if last is not None and last.handle is not None:
            try:
                live = self._runner.describe_app(last.handle)
            except Exception as e:
                logger.warning("cannot describe attempt %d (%s): %s", last.n, last.handle, e)
                unreachable = f"attempt {last.n} ({last.handle}): its scheduler did not answer ({e}); the job goes on"
        # why the driver cannot go on (it cannot record: a full disk), or cannot be started
        at_start = self._problem_at_start.pop(app_id, "")
        problem = (
            "" if state.final is not None else self.store.problem(app_id) or at_start or self._no_driver.get(app_id, "")
        )
        running = live is not None and last is not None and last.state is None and not is_terminal(live.state)
        if state.final is not None:
            app_state = AppState[state.final]
        elif problem:  # the attempt may run, but nothing acts on what it does until the problem is gone
            app_state = live.state if running and live is not None else AppState.UNKNOWN
        elif unreachable and last is not None and last.state is None:
            app_state = AppState.UNKNOWN
        elif running and live is not None:
            app_state = live.state
        else:
            app_state = AppState.RUNNING if state.attempts else AppState.SUBMITTED
        attempts = [a.as_json(live.state.name if live is not None and a is last else None) for a in state.attempts]
        return DescribeAppResponse(
            app_id=app_id,
            state=app_state,
            num_restarts=max(len(state.attempts) - 1, 0),
            msg=state.msg or problem or unreachable or _backoff_msg(state) or ("" if live is None else live.msg),
            ui_url=None if live is None else live.ui_url,
            metadata={
                "attempts": attempts,
                "targets": list(state.options.targets),
                **_controller_metadata(state.spec, locate(app_id, self.store.root)[0]),
                **({"problem": problem} if problem else {}),
                **({"skipped": state.spec["skipped"]} if state.spec.get("skipped") else {}),
                "driver": "running"
                if self.store.driver_pid(app_id) is not None
                else "finished"
                if state.final is not None
                else "stopped",
            },
            roles_statuses=[] if live is None else list(live.roles_statuses),
            roles=list(load_app(state.spec["app"]).roles),
        )

    def wait(self, app_id: str, timeout: float | None = None, poll_interval: float = 1.0) -> DescribeAppResponse | None:
        """Blocks until the job is final (or ``timeout`` seconds pass); resumes a dead driver."""
        if native.is_native(app_id):
            return super().wait(app_id, timeout, poll_interval)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.02
        while True:
            desc = self.describe(app_id)
            if desc is None or (is_terminal(desc.state) and self.store.load(app_id).final is not None):
                return desc
            if deadline is not None and time.monotonic() >= deadline:
                return desc
            time.sleep(delay)
            delay = min(delay * 2, 0.2, poll_interval)

    def _native_jobs(self, target: str) -> list[ListAppResponse]:
        """The jobs of ``target`` that recover inside it (see :meth:`list`)."""
        from torchx.schedulers import get_scheduler_factories

        if target not in get_scheduler_factories():
            raise InvalidRunConfigException(f"managed: target {target!r} is not an installed scheduler", "targets")
        sched = self._runner.get_scheduler(target)
        if not sched.capabilities.recovery:
            raise InvalidRunConfigException(
                f"managed: target {target!r} cannot recover jobs by itself, so it holds no native managed jobs",
                "targets",
            )
        return [
            ListAppResponse(
                native.native_id(target, app.app_id),
                app.state,
                name=app.name,
                submitted=app.submitted,
                started=app.started,
                ended=app.ended,
            )
            for app in sched.recovery_list()
        ]

    def _journal_jobs(self, cfg: Mapping[str, CfgVal] | None) -> list[ListAppResponse]:
        """The jobs of this machine's state directory, or of ``-cfg journal=PATH``."""
        journal = (cfg or {}).get("journal")
        root = (
            (str(journal).rstrip("/") if is_url(str(journal)) else os.path.abspath(os.path.expanduser(str(journal))))
            if journal
            else None
        )
        store = self.store if root is None else ManagedStore(root)
        out = []
        for name in reversed(store.job_ids()):
            job_id = located_id(name, root)
            try:
                state = self.store.load(job_id)
            except (UnknownJobError, ValueError, KeyError) as e:
                logger.warning("torchx: warning: skipped managed job %s: %s", job_id, e)
                continue
            if state.final:
                app_state = AppState[state.final]
            else:  # a job whose driver cannot go on (a full disk) is not said to run: `status` says why
                app_state = AppState.UNKNOWN if store.problem(name) else AppState.RUNNING
            out.append(ListAppResponse(job_id, app_state, name=str(state.spec.get("name", ""))))
        return out

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every managed job stored here (``-cfg journal=PATH``: kept in that journal directory,
        e.g. one a controller job drives), newest first (state from the journal); with ``-cfg
        targets=T1;T2``, then the jobs that recover inside each of those targets (their handles
        ``managed://SESSION/T:ID``), picked out of the target's ``list`` by its
        ``recovery_list`` (by their attempt records, one look per job, or by a mark the
        target's list already reads: not done unless asked).

        Raises:
            InvalidRunConfigException: a target that is not installed or cannot recover jobs
        """
        out = self._journal_jobs(cfg)
        for target in (t.strip() for t in options.list_option((cfg or {}).get("targets")) if t.strip()):
            out += self._native_jobs(target)
        return out

    # ------------------------------------------------------------------ stopping
    def _cancel_existing(self, app_id: str) -> None:
        """Stops the running attempt and ends the job CANCELLED (no further attempt); waits for it."""
        if native.is_native(app_id):
            target, own = native.split_id(app_id)
            self._runner.get_scheduler(target).cancel(own)
            return
        if not self._stop(app_id):
            logger.warning(
                "managed job %s: its driver did not end it within %.0fs; `torchx status` tells", app_id, CANCEL_TIMEOUT
            )

    def _stop(self, app_id: str) -> bool:
        """Journals a cancel and waits until the job is final; False if it is not after
        :data:`CANCEL_TIMEOUT`. A live driver is woken to end it; when none runs (it died), this
        process takes the job's driver lock and ends it itself, so no driver is started for a
        job being stopped (one started by another look sees the cancel, or finds the lock taken);
        the same for a job whose controller job cannot run (it failed at once: its log says why)."""
        state = self.store.load(app_id)
        if state.final is not None:
            return True
        try:
            self.store.append(app_id, {"ev": "cancel", "t": time.time()}, sync=True)
        except OSError as e:  # a full disk: nothing was cancelled
            raise RecordError(f"the cancel of managed job {app_id}", e) from None
        pid = self.store.driver_pid(app_id)
        if pid is not None and pid > 0:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        here = _cluster_controller(state.spec) is None  # a controller job's journal is driven there
        deadline = time.monotonic() + CANCEL_TIMEOUT
        delay = 0.01
        while time.monotonic() < deadline:
            state_now = self._load(app_id, resume=not here)
            if state_now is None or state_now.final is not None:
                return True
            # no controller can drive it (one failed, see _load): this process ends it
            stuck = here or app_id in self._no_driver
            if stuck and self.store.driver_pid(app_id) is None and self._drive_here(app_id):
                continue
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        return False

    def _drive_here(self, app_id: str) -> bool:
        """Drives the job in this process under its driver lock (a cancelled job: to its end);
        False if another process holds the lock."""
        from torchx_managed.driver import Driver

        with self.store.driver_lock(app_id) as held:
            if held:
                Driver(self.store, app_id, self._runner).run()
        return held

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the job, deletes every attempt from its target, and removes the job's record.

        Raises:
            RuntimeError: the job could not be ended (its driver did not stop): nothing is deleted
        """
        if native.is_native(app_id):
            target, own = native.split_id(app_id)
            self._runner.get_scheduler(target).delete(own)
            return
        if not self._stop(app_id):
            raise RuntimeError(
                f"managed job {app_id}: its driver did not end it within {CANCEL_TIMEOUT:.0f}s, so it was not"
                f" deleted; `torchx status {make_app_handle(self.backend, self.session_name, app_id)}` tells"
                " what it does, then delete it again"
            )
        for attempt in self.store.load(app_id).attempts:
            if attempt.handle is not None:
                try:
                    self._runner.delete(attempt.handle)
                except Exception as e:
                    logger.warning("cannot delete attempt %d (%s): %s", attempt.n, attempt.handle, e)
        self.store.remove(app_id)

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
        """Lines of replica ``k`` of ``role_name`` of every attempt, in order; with ``should_tail``,
        follows the running attempt and then the next ones until the job is final."""
        if native.is_native(app_id):  # one job on the target: its logs hold every attempt
            target, own = native.split_id(app_id)
            sched = self._runner.get_scheduler(target)
            return sched.log_iter(own, role_name, k, regex, since, until, should_tail, streams)
        return self._log_lines(app_id, role_name, k, regex, since, until, should_tail, streams)

    def _log_lines(
        self,
        app_id: str,
        role_name: str,
        k: int,
        regex: str | None,
        since: datetime | None,
        until: datetime | None,
        should_tail: bool,
        streams: Stream | None,
    ) -> Iterator[str]:
        done = 0  # attempts whose lines were all given
        while True:
            state = self._load(app_id, resume=should_tail)
            if state is None:
                raise ValueError(f"unknown managed job {app_id!r}; `torchx list -s managed` shows the known jobs")
            while done < len(state.attempts) and (
                state.attempts[done].handle is not None or state.attempts[done].state is not None
            ):
                attempt = state.attempts[done]
                if attempt.handle is None:  # ended without starting (its submission failed): no output
                    done += 1
                    continue
                follow = should_tail and attempt.state is None
                yield from self._attempt_lines(attempt, role_name, k, regex, since, until, follow, streams)
                if follow:  # its output ended: go on once the driver journaled its end
                    while (now := self._load(app_id)) is not None and now.attempts[done].state is None:
                        time.sleep(0.05)
                done += 1
            if not should_tail or (state.final is not None and done >= len(state.attempts)):
                return
            time.sleep(0.05)

    def _attempt_lines(
        self,
        attempt: Attempt,
        role_name: str,
        k: int,
        regex: str | None,
        since: datetime | None,
        until: datetime | None,
        tail: bool,
        streams: Stream | None,
    ) -> Iterator[str]:
        assert attempt.handle is not None
        parsed = parse_app_handle(attempt.handle)
        try:
            sched = self._runner.get_scheduler(parsed.scheduler_backend)
            if not sched.capabilities.log_tail:
                tail = False
            yield from sched.log_iter(parsed.app_id, role_name, k, regex, since, until, tail, streams)
        except Exception as e:  # an attempt without logs (never started, purged) does not hide the others
            logger.warning("no logs of attempt %d (%s): %s", attempt.n, attempt.handle, e)


def _controller_metadata(spec: Mapping[str, Any], root: str) -> dict[str, Any]:
    """``{"controller": HANDLE}`` for a job driven by a controller job, else nothing."""
    if _cluster_controller(spec) is None:
        return {}
    return {"controller": controller_record.controller_handle(root), "journal": root}


def _backoff_msg(state: JobState) -> str:
    """``restarting in 8s after APP_ERROR (restart_backoff)`` while the driver waits to restart."""
    until = restart_at(state) if state.final is None and not state.cancelled else None
    last = state.last
    if until is None or last is None or until <= time.time():
        return ""
    return f"restarting in {until - time.time():.0f}s after {last.cause} (restart_backoff)"


def _first_line(e: BaseException) -> str:
    """The first line of an error's message (its type's name if it has none)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _local_path(location: str) -> str | None:
    """The path of a location on this machine's file system (a path or a ``file://`` URL), else None."""
    if location.startswith("file://"):
        return location[len("file://") :]
    return None if "://" in location else location


def _cluster_controller(spec: Mapping[str, Any]) -> str | None:
    """The scheduler the job's controller runs on as a job (None: a local driver drives it)."""
    chosen = str(spec["options"].get("controller") or "auto")
    return None if chosen in options.CONTROLLERS else chosen


def create_scheduler(session_name: str, state_dir: str | None = None, **kwargs: Any) -> ManagedScheduler:
    """The ``managed`` scheduler (the plugin's factory)."""
    return ManagedScheduler(session_name, state_dir)
