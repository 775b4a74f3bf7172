"""``local_cwd``: every replica is a process on this machine, owned by a per-job supervisor.

Jobs outlive the process that submitted them; their state lives on disk (see
:mod:`torchx_sched_local.store`), so ``status``/``log``/``list``/``cancel``/``delete``/
``describe``/``wait`` work from any later process of the same user.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import select
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.ids import make_unique, sanitize_name
from torchx.schedulers.streams import Stream, filter_regex
from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.roles import NONE, AppDef, RetryPolicy, Role
from torchx.specs.runopts import CfgVal, require_non_negative, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, is_terminal
from torchx.util.record import field, record

from torchx_sched_local import logfiles, store
from torchx_sched_local._files import private_dir
from torchx_sched_local.codec import role_from_dict, role_to_dict
from torchx_sched_local.gpus import assign_gpus, count_gpus
from torchx_sched_local.limits import check_replica_count
from torchx_sched_local.store import FINAL_STATES
from torchx_sched_local.watch import DirWatch, pidfd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

#: seconds ``cancel`` waits for the supervisor beyond the grace period before acting itself
CANCEL_SLACK = 10.0
_LIVENESS_CHECK = 1.0
#: how long a delete waits for the supervisor of a job that has just ended to finish its last acts (s)
_LAST_ACTS = 2.0
_SAFE_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


@record
class LocalOpts(StructuredOpts):
    """Run options of ``local_cwd``."""

    log_dir: str | None = None
    """Where logs go: <log_dir>/<session>/<app_id>/<role>/<replica>/{stdout,stderr}.log, and a SUCCESS summary once the app ends (default: in the job's state dir)."""
    prepend_cwd: bool = False
    """Put the replica's working directory first on its PATH, so executables there win over PATH."""
    auto_set_cuda_visible_devices: bool = False
    """Give each replica its own GPUs (CUDA_VISIBLE_DEVICES from resource.gpu); fails if there are too few."""
    stop_grace_period: float = 5.0
    """Seconds between SIGTERM and SIGKILL when a job is cancelled or a replica is stopped."""


@record
class ReplicaParams:
    """How one replica is started."""

    role: str
    role_index: int
    replica_id: int
    cmd: list[str]
    env: dict[str, str]
    cwd: str
    image: str
    log_dir: str


@record
class LocalRequest:
    """What ``local_cwd`` runs: the app id, its replicas and where its logs go."""

    app_id: str
    name: str
    log_root: str
    stop_grace_period: float
    replicas: list[ReplicaParams] = field(default_factory=list)
    roles: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    #: a job that recovers in its supervisor: its policy as data (see :mod:`.recovering`)
    recovery: dict[str, Any] | None = None

    # TorchX 0.7's ``PopenRequest`` view of the same request (made when read, not when submitting)
    @property
    def log_dir(self) -> str:
        """The app's log directory (TorchX's ``PopenRequest.log_dir``): :attr:`log_root`."""
        return self.log_root

    @property
    def role_log_dirs(self) -> dict[str, list[str]]:
        """Role name -> the log directory of each of its replicas, by replica id (TorchX's)."""
        dirs: dict[str, list[str]] = {}
        for r in self.replicas:
            dirs.setdefault(r.role, []).append(r.log_dir)
        return dirs

    @property
    def role_params(self) -> dict[str, list[Any]]:
        """Role name -> each replica's ``ReplicaParam`` (TorchX's ``PopenRequest.role_params``):
        its argv, its whole environment (``PATH`` included, as the replica gets it), its
        ``stdout.log``/``stderr.log`` and working directory. ``combined`` is None: the
        combined order is an index of the two files, read by ``log_iter``, not a third file.
        A copy: changing it changes nothing that runs."""
        from torchx_sched_local.replica_param import ReplicaParam

        params: dict[str, list[Any]] = {}
        for r in self.replicas:
            params.setdefault(r.role, []).append(
                ReplicaParam(
                    args=list(r.cmd),
                    env=dict(r.env),
                    stdout=os.path.join(r.log_dir, "stdout.log"),
                    stderr=os.path.join(r.log_dir, "stderr.log"),
                    cwd=r.cwd,
                )
            )
        return params

    def __str__(self) -> str:
        lines = [f"# local_cwd app {self.app_id} (logs: {self.log_root})"]
        if self.recovery is not None:
            policy = ", ".join(f"{k}={v}" for k, v in self.recovery.items() if k != "killed_signals")
            lines.append(f"# recovers in its supervisor: {policy}")
        for r in self.replicas:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(r.env.items()))
            lines.append(f"# {r.role}/{r.replica_id}")
            lines.append(f"cd {shlex.quote(r.cwd)} && env {env} {shlex.join(r.cmd)}")
        return "\n".join(lines)


def _role_dir(role: Role, index: int) -> str:
    name = role.name
    if name and name[0].isalnum() and set(name) <= _SAFE_NAME:
        return name
    return f"_role{index}"


class LocalScheduler(Scheduler[LocalOpts, AppDef, LocalRequest]):
    """Runs apps as processes on this machine (see the module docstring).

    Args:
        session_name: the session (part of app handles)
        image_provider_class: TorchX's hook for where replicas run: called with the run options,
            it returns an ``ImageProvider`` (``torchx.schedulers.local_scheduler``) whose
            ``fetch_role``/``get_entrypoint``/``get_cwd`` give each role its image root (the
            ``img_root`` macro), program and working directory. Default: the current directory
            for every role (``CWDImageProvider``, what ``local_cwd`` means)
        cache_size: TorchX's bound on the apps one scheduler object keeps in memory; jobs are
            kept on disk here, so it only has to be positive
        extra_paths: directories put first on every replica's ``PATH``
        state_dir: where jobs are recorded (default :func:`torchx_sched_local.store.default_state_dir`)

    Raises:
        ValueError: ``cache_size`` is not positive
    """

    capabilities = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        log_streams=frozenset({"stdout", "stderr", "combined"}),
        logs=True,
        list=True,
        cancel=True,
        delete=True,
        workspace=False,
        retry_policies=frozenset({RetryPolicy.APPLICATION, RetryPolicy.ROLE, RetryPolicy.REPLICA}),
        elastic=False,
        mounts=frozenset(),
        attach=True,
        recovery=True,
        end_fd=True,
    )

    def __init__(
        self,
        session_name: str,
        image_provider_class: Callable[[Mapping[str, CfgVal]], Any] | None = None,
        cache_size: int = 100,
        extra_paths: list[str] | None = None,
        state_dir: str | None = None,
    ) -> None:
        if cache_size <= 0:
            raise ValueError(f"cache_size must be greater than zero, got {cache_size}")
        super().__init__("local_cwd", session_name)
        self._provider_class = image_provider_class
        #: TorchX's attribute, kept for code that reads it: bounds nothing here
        self._cache_size = cache_size
        self._extra_paths = [os.fspath(p) for p in extra_paths or []]
        self.store = store.JobStore(state_dir)
        #: supervisors this process started: app id -> pid (their state.json has it once they run)
        self._pids: dict[str, int] = {}

    @property
    def _image_provider_class(self) -> Callable[[Mapping[str, CfgVal]], Any]:
        """TorchX's attribute: the image provider class given, else ``CWDImageProvider`` (what
        no provider does: every role runs in the current directory)."""
        if self._provider_class is not None:
            return self._provider_class
        from torchx_sched_local.image_providers import CWDImageProvider  # not on the run path

        return CWDImageProvider

    def close(self) -> None:
        """Reaps the supervisors this process started that have ended (running jobs go on)."""
        _reap()
        self.store.close()

    # ------------------------------------------------------------------ submitting
    def _run_opts(self) -> runopts:
        return _local_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: LocalOpts | None = None) -> None:
        """Local replicas need no resource: nothing to check."""

    def _session_dir(self) -> str:
        """The session's directory in a ``log_dir`` (``<log_dir>/<session>/<app_id>``, as TorchX's);
        a session name that is no plain file name gets ``_session`` instead."""
        name = self.session_name
        return name if name and name[0].isalnum() and set(name) <= _SAFE_NAME else "_session"

    def _submit_dryrun(self, app: AppDef, cfg: LocalOpts) -> AppDryRunInfo[LocalRequest]:
        opts = LocalOpts.from_cfg(cfg)
        check_replica_count(app, "local_cwd")
        app_id = make_unique(sanitize_name(app.name, max_length=60, allowed=r"a-z0-9_\-"))
        log_root = (
            os.path.join(os.path.abspath(os.path.expanduser(opts.log_dir)), self._session_dir(), app_id)
            if opts.log_dir
            else os.path.join(self.store.root, app_id, "logs")
        )
        devices: list[list[str]] | None = None
        if opts.auto_set_cuda_visible_devices:
            devices = assign_gpus([(r.resource.gpu, r.num_replicas) for r in app.roles], count_gpus())
        request = LocalRequest(
            app_id=app_id,
            name=app.name,
            log_root=log_root,
            stop_grace_period=float(require_non_negative("stop_grace_period", opts.stop_grace_period)),
            roles=[role_to_dict(r) for r in app.roles],
            metadata=dict(app.metadata),
        )
        # local_cwd runs every replica in the launcher's working directory, whatever role.image
        # says (it is the "image": ${img_root}); that directory ends the PATH, so a program
        # there is found when PATH has none by its name (first with prepend_cwd)
        here = os.getcwd()
        provider = self._provider_class(cfg) if self._provider_class is not None else None
        for index, role in enumerate(app.roles):
            img_root, cwd = here, here
            if provider is not None:
                img_root = provider.fetch_role(role)
                cwd = provider.get_cwd(role.image) or here
            path = os.pathsep.join(
                [*self._extra_paths, _path_with(cwd, os.environ.get("PATH", os.defpath), opts.prepend_cwd)]
            )
            role_dir = _role_dir(role, index)
            # torchrun's log dir, as TorchX's: one per role, where each run makes its own subdirectory
            # (under the log root: the supervisor finds what a replica left running by it)
            elastic_log = os.path.join(log_root, "torchelastic", role_dir)
            for k in range(role.num_replicas):
                replica_log = os.path.join(log_root, role_dir, str(k))
                values = macros.Values(img_root=img_root, app_id=app_id, replica_id=str(k), rank0_env=RANK0_ENV)
                filled = values.apply(role)
                if provider is not None:
                    filled.entrypoint = provider.get_entrypoint(img_root, filled)
                env = {
                    RANK0_ENV: "localhost",
                    "TORCHX_ROLE_NAME": role.name,
                    "TORCHX_REPLICA_IDX": str(k),
                    "TORCHELASTIC_ERROR_FILE": os.path.join(replica_log, "error.json"),
                    "PET_LOG_DIR": elastic_log,
                }
                if "PYTHONUNBUFFERED" not in os.environ:
                    env["PYTHONUNBUFFERED"] = "1"
                if devices is not None and devices[index][k]:
                    env["CUDA_VISIBLE_DEVICES"] = devices[index][k]
                env.update(filled.env)
                if "PATH" in filled.env:
                    path = os.pathsep.join([*self._extra_paths, _path_with(cwd, filled.env["PATH"], opts.prepend_cwd)])
                env["PATH"] = path
                request.replicas.append(
                    ReplicaParams(
                        role=role.name,
                        role_index=index,
                        replica_id=k,
                        cmd=[filled.entrypoint, *filled.args],
                        env=env,
                        cwd=cwd,
                        image=role.image,
                        log_dir=replica_log,
                    )
                )
        return AppDryRunInfo(request, str)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[LocalRequest]:
        """A job whose supervisor recovers it (see :mod:`torchx_sched_local.recovering`): when a
        replica fails, every replica is stopped and the app runs again as the next attempt
        while ``policy``'s budgets last. A replica killed by a signal from outside (SIGKILL, the
        OOM killer; also as a shell's exit 128+N) counts against ``max_recoveries``, any other
        failure against ``max_restarts`` (exit codes of ``recover_on_exit_codes`` uncounted);
        the supervisor waits ``restart_backoff`` seconds (default 1) before restarting after an
        application error, doubled per error in a row. ``TORCHX_CHECKPOINT_DIR`` defaults to
        ``checkpoints/`` in the job's directory; the roles' own ``max_retries`` are not used."""
        from torchx.schedulers.causes import EndCause, signal_cause
        from torchx.schedulers.recovery import DEFAULT_RESTART_BACKOFF

        info = self._submit_dryrun(app, LocalOpts.from_cfg(cfg))
        req = info.request
        ckpt = policy.checkpoint_dir or os.path.join(self.store.job_dir(req.app_id), "checkpoints")
        ckpt = os.path.abspath(os.path.expanduser(ckpt))
        backoff = DEFAULT_RESTART_BACKOFF if policy.restart_backoff is None else policy.restart_backoff
        req.recovery = {
            "max_restarts": policy.max_restarts,
            "max_recoveries": policy.max_recoveries,
            "recover_on_exit_codes": sorted(set(policy.recover_on_exit_codes)),
            "restart_backoff": float(backoff),
            "max_backoff": float(policy.max_backoff),
            "checkpoint_dir": ckpt,
            "killed_signals": [s for s in range(1, 65) if signal_cause(s) == EndCause.KILLED],
        }
        for replica in req.replicas:
            replica.env["TORCHX_CHECKPOINT_DIR"] = ckpt
        return info

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts the job's supervisor recorded in its ``attempts`` file; None for an
        unknown job or one that does not recover by itself."""
        from torchx.schedulers.recovery import AttemptLog, read_attempt_log

        from torchx_sched_local.recovering import ATTEMPT_LOG

        app = self._read(self.store.app, app_id)
        if app is None or not app.get("recovery"):
            return None
        try:
            with open(os.path.join(self.store.job_dir(app_id), ATTEMPT_LOG), encoding="utf-8", errors="replace") as f:
                return read_attempt_log(f.read())
        except FileNotFoundError:
            return AttemptLog()

    def schedule(self, dryrun_info: AppDryRunInfo[LocalRequest]) -> str:
        """Records the job and starts its supervisor; returns at once with the app id.

        The job's directory is assembled under a hidden name (mode 0600, directories 0700) and
        renamed into place once complete, so a failure (a full disk) leaves nothing behind and
        readers never see a half-made job; the record is on disk when this returns (see the
        store's "Durability").

        Raises:
            ValueError: this request was already scheduled (dry-run again for a new app id)
            OSError: the job cannot be recorded or started (the message names the path)
        """
        from torchx_sched_local.launch import start_supervisor

        req = dryrun_info.request
        external_logs = not req.log_root.startswith(self.store.job_dir(req.app_id) + os.sep)
        staging = ""
        lock_fd = -1
        made_logs = False
        published = False
        try:
            staging = self.store.staging_dir(req.app_id)
            lock_fd = os.open(
                os.path.join(staging, store.LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
            )
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            created = time.time()
            app = {"created": created, **vars(req), "replicas": [vars(r) for r in req.replicas]}
            # written in place: the directory is published whole; commit() makes app.json durable, and
            # a crash makes state.json moot (see store's "Durability")
            store.create_json(os.path.join(staging, store.APP_FILE), app)
            store.create_json(
                os.path.join(staging, store.STATE_FILE),
                {"app_id": req.app_id, "name": req.name, "created": created, "state": "SUBMITTED", "msg": ""},
                reserve=store.state_reserve(len(req.replicas)),  # room for the final state on a full disk
            )
            if external_logs:
                parent = os.path.dirname(req.log_root)  # <log_dir>/<session>
                for d in (os.path.dirname(parent), parent):
                    if os.path.exists(d) and not os.path.isdir(d):
                        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), d)
                os.makedirs(parent, exist_ok=True)
                private_dir(req.log_root)  # fails if it exists: never write into someone else's tree
                made_logs = True
                _make_log_dirs(req, req.log_root)
            else:
                logs = os.path.join(staging, "logs")
                private_dir(logs)
                _make_log_dirs(req, logs)
            job_dir = self.store.publish(staging, req.app_id)
            staging = ""
            published = True
            self.store.commit(req.app_id, app)
        except BaseException as e:
            if lock_fd >= 0:
                os.close(lock_fd)
            if staging:
                _remove_tree(staging)
            if published:
                with contextlib.suppress(OSError):
                    self.store.remove(req.app_id)
            if made_logs:
                _remove_tree(req.log_root)
            if isinstance(e, FileExistsError) and e.filename == self.store.job_dir(req.app_id):
                raise ValueError(
                    f"app {req.app_id!r} already exists: this dry run was scheduled before;"
                    " dry-run again for a new app id"
                ) from None
            if isinstance(e, OSError):
                if staging and isinstance(e.filename, str) and e.filename.startswith(staging):
                    e.filename = self.store.job_dir(req.app_id) + e.filename[len(staging) :]  # the name users know
                raise _os_error(e, f"cannot record local_cwd app {req.app_id}") from None
            raise
        try:
            pid = start_supervisor(job_dir, lock_fd)
            if pid is not None:
                self._pids[req.app_id] = pid
        except OSError as e:
            with contextlib.suppress(OSError):
                store.write_json(
                    os.path.join(job_dir, store.STATE_FILE),
                    {"app_id": req.app_id, "name": req.name, "created": time.time(), "state": "FAILED", "msg": str(e)},
                )
            raise _os_error(e, f"cannot start local_cwd app {req.app_id}") from None
        finally:
            os.close(lock_fd)
        return req.app_id

    # ------------------------------------------------------------------ state
    def _handle(self, app_id: str) -> str:
        return f"local_cwd://{self.session_name}/{app_id}"

    def _read(self, read: Callable[[str], dict[str, Any] | None], app_id: str) -> dict[str, Any] | None:
        """``read(app_id)``; an unreadable file raises naming the job's handle (for the hint to delete it)."""
        try:
            return read(app_id)
        except store.UnreadableJobError as e:
            e.handle = self._handle(app_id)
            raise

    def _state(self, app_id: str) -> dict[str, Any] | None:
        """The job's state, with a dead supervisor's unfinished job reported FAILED.

        Raises:
            UnreadableJobError: its ``state.json`` cannot be read
        """
        st = self._written_state(app_id)
        if st is None or st["state"] in FINAL_STATES:
            return _name_left_running(st)
        if store.lock_is_held(self.store.job_dir(app_id)):
            # no answer from the holder: it may have stored the final state since ``st`` was read
            st = self._held_outcome(app_id) or self._written_state(app_id)
            if st is None or st["state"] in FINAL_STATES or not _supervisor_gone(st):
                return _handed_over(st)
            # the holder is not the supervisor but its watchdog (or a cancel) recording the end
            # of a job whose supervisor died: that job reads as it did before they took the lock
        else:
            st = self._read(self.store.state, app_id)  # the supervisor writes its last state before letting go
        if st is not None and st["state"] not in FINAL_STATES:
            live = self._survivors(app_id, st)
            st["state"] = "FAILED"
            st["end"] = {"by": "supervisor"}
            st["msg"] = _supervisor_died(st) + (
                f"; replicas still running: pids {', '.join(map(str, live))} (`torchx cancel` stops them)"
                if live
                else ""
            )
        return st

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the job ended, from what its supervisor recorded (see :mod:`torchx.schedulers.causes`).

        - a cancel through torchx: ``CANCELLED``; the supervisor stopped by a signal from
          outside torchx (SIGTERM/SIGINT/SIGHUP, e.g. a shutdown): ``KILLED``
        - the supervisor lost (SIGKILLed, OOM-killed, crashed; its watchdog or a later
          ``status`` found it gone): ``NODE_FAILURE`` (the machine running the job went away)
        - a replica that failed for good: its exit code (``APP_ERROR``), or the signal that
          ended it (:func:`~torchx.schedulers.causes.signal_end`: ``KILLED`` for a signal from
          outside, ``APP_ERROR`` for a crash); an exit code 128+N (N a signal: a shell whose
          child signal N ended) reads as that signal, as on LSF and Kubernetes; one that could
          not be started: ``APP_ERROR``
        - too many replicas for the process's file limit: ``NO_CAPACITY``

        None while the job runs, or for an unknown job.
        """
        from torchx.schedulers.causes import AttemptEnd, EndCause, cause_from_state, signal_end, signal_name

        try:
            st = self._state(app_id)
        except store.UnreadableJobError:
            return None
        if st is None or st["state"] not in FINAL_STATES:
            return None
        msg = st.get("msg") or ""
        end = st.get("end")
        if not isinstance(end, dict):  # recorded before causes were
            return cause_from_state(AppState[st["state"]])
        by = end.get("by")
        if by == "done":
            return AttemptEnd(EndCause.APP_ERROR, 0, "succeeded")
        if by == "cancel":
            return AttemptEnd(EndCause.CANCELLED, None, msg or "cancelled")
        if by == "signal":
            name = signal_name(int(end.get("signal") or 0))
            return AttemptEnd(EndCause.KILLED, None, f"the job's supervisor got {name} from outside torchx")
        if by == "supervisor":
            return AttemptEnd(EndCause.NODE_FAILURE, None, msg)
        if by == "limits":
            return AttemptEnd(EndCause.NO_CAPACITY, None, msg)
        replicas = st.get("replicas") or []
        index = end.get("replica")
        if by == "replica" and isinstance(index, int) and 0 <= index < len(replicas):
            code = replicas[index].get("exit_code")
            if not isinstance(code, int):  # it could not be started
                return AttemptEnd(EndCause.APP_ERROR, None, msg)
            if code < 0:
                return signal_end(-code, msg)
            if 128 < code <= 128 + 64:  # a shell (utils.sh) whose child signal N ended: read as
                # LSF's and Kubernetes' plugins read 128+N, the core rule of causes.AttemptEnd
                return signal_end(code - 128, f"{msg} (128 + {code - 128}: {signal_name(code - 128)})")
            return AttemptEnd(EndCause.APP_ERROR, code, msg)
        return AttemptEnd(EndCause.UNKNOWN, None, msg)

    def _written_state(self, app_id: str) -> dict[str, Any] | None:
        """The job's ``state.json``, or what a machine crash that lost it means (FAILED).

        Raises:
            UnreadableJobError: the file cannot be read, and not because of a crash
        """
        try:
            return self._read(self.store.state, app_id)
        except store.UnreadableJobError:
            st = self._state_lost_in_crash(app_id)
            if st is None:
                raise
            return st

    def _state_lost_in_crash(self, app_id: str) -> dict[str, Any] | None:
        """The state of a job whose ``state.json`` a machine crash lost, or None.

        A state that is not final is not forced to disk (see the store's "Durability"), so a
        crash may leave it empty or torn. When the job was recorded before the machine last
        booted, nobody holds its lock and its ``app.json`` is whole, the job reads as FAILED;
        otherwise (None) the file was damaged some other way and is reported as such.
        """
        job_dir = self.store.job_dir(app_id)
        try:
            recorded = os.stat(os.path.join(job_dir, store.APP_FILE)).st_mtime
        except OSError:
            return None
        if recorded >= store.boot_time() or store.lock_is_held(job_dir):
            return None
        app = self._read(self.store.app, app_id)
        if app is None:
            return None
        return {
            "app_id": app_id,
            "name": app.get("name", app_id),
            "created": app.get("created"),
            "state": "FAILED",
            "msg": store.MACHINE_STOPPED,
            "end": {"by": "supervisor"},  # the machine went away: a node failure
        }

    def _survivors(self, app_id: str, st: dict[str, Any]) -> list[int]:
        """Live processes of a job whose supervisor is gone (see :mod:`.orphans`)."""
        from torchx_sched_local import orphans

        return orphans.survivors(st, self._log_root(app_id))

    def _log_root(self, app_id: str) -> str | None:
        try:
            log_root = (self.store.app(app_id) or {}).get("log_root")
        except store.UnreadableJobError:
            return None
        return log_root if isinstance(log_root, str) else None

    def _held_outcome(self, app_id: str) -> dict[str, Any] | None:
        """The final state the job's supervisor holds because it cannot store it (full or read-only
        state directory), its message saying so; None in the usual case."""
        from torchx_sched_local.outcome import UNSTORED, ask

        st = ask(self.store.job_dir(app_id))
        if st is None:
            return None
        note = (
            f"{st['state']} could not be stored yet ({st.pop(UNSTORED)}): the job's supervisor"
            f" (pid {st.get('pid')}) keeps trying"
        )
        st["msg"] = f"{st['msg']}; {note}" if st.get("msg") else note
        return st

    def exists(self, app_id: str) -> bool:
        """True if the job is recorded, even if its files cannot be read (so ``delete`` removes it)."""
        return self.store.exists(app_id)

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state, per-replica states and submitted roles; None if unknown.

        Raises:
            UnreadableJobError: a file of the job cannot be read (the message names it)
        """
        app = self._read(self.store.app, app_id)
        st = self._state(app_id) if app is not None else None
        if app is None or st is None:
            return None
        try:
            roles = [role_from_dict(r) for r in app["roles"]]
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            path = os.path.join(self.store.job_dir(app_id), store.APP_FILE)
            raise store.UnreadableJobError(
                path, f"wrong shape: a role cannot be read ({e!r})", self._handle(app_id)
            ) from None
        states = st.get("replicas") or [{} for _ in app["replicas"]]
        statuses = [RoleStatus(r.name, []) for r in roles]
        for spec, rs in zip(app["replicas"], states, strict=False):
            replica_state = AppState[rs.get("state", "PENDING")]
            if replica_state in (AppState.RUNNING, AppState.PENDING) and is_terminal(AppState[st["state"]]):
                replica_state = AppState.UNKNOWN
            statuses[spec["role_index"]].replicas.append(
                ReplicaStatus(
                    id=spec["replica_id"],
                    state=replica_state,
                    role=spec["role"],
                    hostname="localhost",
                    structured_error_msg=rs.get("error", NONE),
                )
            )
        return DescribeAppResponse(
            app_id=app_id,
            state=AppState[st["state"]],
            num_restarts=int(st.get("num_restarts") or 0),
            msg=st.get("msg") or "",
            structured_error_msg=st.get("error", NONE),
            ui_url=f"file://{app['log_root']}",
            metadata=dict(app.get("metadata") or {}),
            roles_statuses=statuses,
            roles=roles,
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every job of this user, newest first.

        A job whose state cannot be read is left out and reported (with its file) as a
        warning on the ``torchx_sched_local`` logger, which reaches stderr by default.
        """
        found = []
        for app_id in self.store.app_ids():
            try:
                st = self._state(app_id)
            except store.UnreadableJobError as e:
                import logging

                logging.getLogger("torchx_sched_local").warning(
                    "torchx: warning: skipped local_cwd job %s: %s", app_id, e
                )
                continue
            if st is not None:
                final = st["state"] in FINAL_STATES
                times = {key: st[key] for key in ("created", "started", "updated") if _is_time(st.get(key))}
                resp = ListAppResponse(
                    app_id,
                    AppState[st["state"]],
                    name=st["name"],
                    submitted=times.get("created"),
                    started=times.get("started"),
                    ended=times.get("updated") if final else None,
                )
                found.append((st.get("created") or 0.0, resp))
        found.sort(key=lambda item: item[0], reverse=True)
        return [resp for _, resp in found]

    def wait(self, app_id: str, timeout: float | None = None, poll_interval: float = 1.0) -> DescribeAppResponse | None:
        """Blocks until the job ends (its final state is stored) or ``timeout`` seconds pass.

        Reacts to the supervisor's exit at once (pidfd on Linux; elsewhere it blocks on
        the job's lock or re-checks every few milliseconds), and, for a supervisor this
        process forked, to the byte it writes to the end pipe (:mod:`.launch`) once the final
        state is stored, before its exit.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self._state(app_id)
            if st is None or st["state"] in FINAL_STATES:
                _reap()
                desc = self.describe(app_id)
                # a final state the supervisor held (it could not store it) may read as running
                # a moment later, while it stores it or cannot accept the question: ask again
                if st is None or desc is None or is_terminal(desc.state):
                    return desc
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return self.describe(app_id)
            self._wait_supervisor(app_id, st.get("pid") or self._pids.get(app_id), remaining)

    def end_fd(self, app_id: str) -> int | None:
        """A file descriptor that becomes readable once the job's supervisor exited (a Linux
        pidfd), for a caller that waits on many jobs at once with ``select``/``poll`` and then
        reads their state with :meth:`describe`; the caller closes it. None when it cannot be
        had (not Linux, the job is unknown or already ended): poll :meth:`describe` instead.

        Best right after :meth:`schedule` of the same scheduler: the supervisor is then this
        process's child, so its pid cannot have been reused.
        """
        pid = self._pids.get(app_id)
        if pid is None:
            try:
                st = self.store.state(app_id)
            except store.UnreadableJobError:
                return None
            pid = st.get("pid") if st is not None else None
            if not isinstance(pid, int):
                return None
            fd = pidfd(pid)
            if fd is not None and not store.lock_is_held(self.store.job_dir(app_id)):
                os.close(fd)  # the job ended: the pid may be someone else's by now
                return None
            return fd
        return pidfd(pid)

    def _wait_supervisor(self, app_id: str, pid: int | None, timeout: float | None) -> None:
        """Returns when the supervisor ``pid`` exits, after ``timeout``, or shortly if ``pid`` is unknown."""
        fd = pidfd(pid)
        if fd is None:
            if pid is None or not hasattr(os, "pidfd_open"):
                time.sleep(0.001 if pid is None else 0.005 if timeout is None else min(0.005, timeout))
            return
        try:
            if store.lock_is_held(self.store.job_dir(app_id)):  # so the pid is still the supervisor's
                # the supervisors this process forked say when their job ended, before they exit
                launch = sys.modules.get("torchx_sched_local.launch")
                ended = launch.end_fd() if launch is not None else -1
                # woken at least every second: an ended job whose state cannot be stored has a live supervisor
                wait = _LIVENESS_CHECK if timeout is None else min(timeout, _LIVENESS_CHECK)
                ready, _, _ = select.select([fd] if ended < 0 else [fd, ended], [], [], wait)
                if ended in ready:
                    launch.drain_end()  # type: ignore[union-attr]
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ stopping
    def _cancel_existing(self, app_id: str) -> None:
        """Stops the job (SIGTERM, SIGKILL after the grace period) and waits until it is CANCELLED.

        Raises:
            UnreadableJobError: its state cannot be read, so its processes are unknown
        """
        job_dir = self.store.job_dir(app_id)
        st = self._written_state(app_id)
        if st is None or st["state"] in FINAL_STATES:
            return
        try:
            grace = float((self.store.app(app_id) or {}).get("stop_grace_period", 5.0))
        except store.UnreadableJobError:
            grace = 5.0
        with contextlib.suppress(OSError):  # the marker covers a cancel racing the supervisor's start
            store.touch_private(os.path.join(job_dir, store.CANCEL_FILE))
        deadline = time.monotonic() + grace + CANCEL_SLACK
        signalled = False
        while time.monotonic() < deadline:
            st = self._read(self.store.state, app_id)
            if st is None or st["state"] in FINAL_STATES:
                return
            if not store.lock_is_held(job_dir):
                break
            pid = st.get("pid") or self._pids.get(app_id)
            if pid and not signalled:  # first: the caller may be killed any moment (a second Ctrl-C)
                signalled = _signal_supervisor(job_dir, pid)
            if self._held_outcome(app_id) is not None:
                return  # it ended; its supervisor holds the outcome until it can store it
            self._wait_supervisor(app_id, pid, max(0.0, deadline - time.monotonic()))
        self._cancel_orphans(app_id)

    def _cancel_orphans(self, app_id: str) -> None:
        """The supervisor is gone (or stuck): kill the replicas it recorded and write CANCELLED."""
        import signal

        from torchx_sched_local import orphans
        from torchx_sched_local.sessions import start_time

        job_dir = self.store.job_dir(app_id)
        st = self._read(self.store.state, app_id)
        if st is None or st["state"] in FINAL_STATES:
            return
        pid = st.get("pid")
        died = not store.lock_is_held(job_dir)
        if pid and not died and start_time(pid) is not None:
            _kill(pid, signal.SIGKILL)  # stuck supervisor: it holds the lock, so the pid is its own
        with store.take_lock(job_dir):
            st = self._read(self.store.state, app_id) or st
            if st["state"] in FINAL_STATES:
                return
            _, left = orphans.kill(st, self._log_root(app_id))
            for rs in st.get("replicas") or []:
                if rs.get("state") in ("PENDING", "RUNNING"):
                    rs["state"] = "CANCELLED"
            if left:  # never report a cancel while something of the job runs
                raise RuntimeError(
                    f"local_cwd app {app_id}: processes of the job still run after SIGKILL: pids"
                    f" {', '.join(map(str, left))} (another user's, or stuck in the kernel); the job is not cancelled"
                )
            if died:  # the job failed when its supervisor died; cancel only cleaned up
                st.update(
                    state="FAILED",
                    msg=f"{_supervisor_died(st)}; `cancel` killed its replicas",
                    end={"by": "supervisor"},
                    updated=time.time(),
                )
            else:
                st.update(
                    state="CANCELLED",
                    msg="cancelled (the job's supervisor was stuck; its replicas were killed)",
                    end={"by": "cancel"},
                    updated=time.time(),
                )
            try:
                store.write_json(os.path.join(job_dir, store.STATE_FILE), st)
            except OSError as e:
                raise _os_error(
                    e, f"local_cwd app {app_id}: its replicas were killed, but its state could not be stored"
                ) from None

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the job, then removes its record and its logs.

        Works when the job's files cannot be read (if its supervisor has ended) and on a full disk.

        Raises:
            UnreadableJobError: the job's state cannot be read while its supervisor still runs
        """
        job_dir = self.store.job_dir(app_id)
        log_root = self._log_root(app_id)
        try:
            self._cancel_existing(app_id)
        except store.UnreadableJobError:
            if store.lock_is_held(job_dir):
                raise
        except OSError:  # a full disk: CANCELLED could not be recorded, the replicas were stopped
            pass
        self._await_last_acts(app_id)
        if log_root and not log_root.startswith(job_dir + os.sep) and os.path.basename(log_root) == app_id:
            _remove_tree(log_root)
        self.store.remove(app_id)

    def _await_last_acts(self, app_id: str) -> None:
        """Waits (at most :data:`_LAST_ACTS`) for the supervisor of a job that has just ended to let
        go of its lock: it marks its last replicas' logs done after storing the final state, and a
        removal meanwhile would leave what it writes behind. Not for a job that has not ended
        (a supervisor holding an outcome it cannot store stops once its directory is gone)."""
        job_dir = self.store.job_dir(app_id)
        deadline = time.monotonic() + _LAST_ACTS
        while store.lock_is_held(job_dir) and time.monotonic() < deadline:
            try:
                st = self._written_state(app_id)
            except store.UnreadableJobError:
                return
            if st is None or st["state"] not in FINAL_STATES:
                return
            time.sleep(0.001)

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
        """Lines of replica ``k`` of ``role_name`` (default stream: ``combined``).

        Raises:
            ValueError: no such app, role or replica
        """
        app = self._read(self.store.app, app_id)
        if app is None:
            raise ValueError(f"unknown local_cwd app {app_id!r}; `torchx list -s local_cwd` shows the known apps")
        spec = next((r for r in app["replicas"] if r["role"] == role_name and r["replica_id"] == k), None)
        if spec is None:
            roles = {r["role"]: 0 for r in app["replicas"]}
            for r in app["replicas"]:
                roles[r["role"]] += 1
            known = ", ".join(f"{name} (replicas 0..{n - 1})" for name, n in roles.items())
            raise ValueError(f"app {app_id!r} has no replica {role_name}/{k}; it has: {known}")
        stream = Stream(streams).value if streams is not None else Stream.COMBINED.value
        base = os.path.join(spec["log_dir"], stream)
        since_ns = _to_ns(since)
        until_ns = _to_ns(until)
        lines: Iterable[str]
        if should_tail:
            lines = self._follow(app_id, spec["log_dir"], base, since_ns, until_ns)
        else:
            lines = logfiles.read_lines(base, since_ns, until_ns)
        return filter_regex(regex, lines) if regex else lines

    def _follow(
        self, app_id: str, log_dir: str, base: str, since_ns: int | None, until_ns: int | None
    ) -> Iterator[str]:
        job_dir = self.store.job_dir(app_id)
        done_path = os.path.join(log_dir, store.DONE_FILE)
        st = self._read(self.store.state, app_id) or {}
        watch = DirWatch(log_dir, st.get("pid"))

        def finished() -> bool:
            # the supervisor marks a replica done before it exits: a free lock without the
            # marker means it died, and nothing more will be written
            return (
                os.path.exists(done_path) or not store.lock_is_held(job_dir) or self._held_outcome(app_id) is not None
            )

        try:
            yield from logfiles.follow_lines(base, finished, lambda: watch.wait(_LIVENESS_CHECK), since_ns, until_ns)
        finally:
            watch.close()


@functools.lru_cache(maxsize=1)
def _cached_runopts() -> runopts:
    return LocalOpts.as_runopts()


def _local_runopts() -> runopts:
    """The options of ``local_cwd`` (built once per process: reading the docstrings is slow)."""
    opts = runopts()
    opts.update(_cached_runopts())
    return opts


def _make_log_dirs(req: LocalRequest, root: str) -> None:
    """Creates every replica's log directory (mode 0700) under ``root``, which stands for
    ``req.log_root`` (log followers watch them from the start; torchelastic writes its error
    file there)."""
    roles: set[str] = set()
    made: list[str] = []
    try:
        for replica in req.replicas:
            role_dir, k = os.path.split(replica.log_dir[len(req.log_root) + 1 :])  # built as log_root/role/k
            if role_dir not in roles:
                roles.add(role_dir)
                with contextlib.suppress(FileExistsError):  # two roles of one name share it
                    os.mkdir(os.path.join(root, role_dir), 0o700)
                    made.append(os.path.join(root, role_dir))
            os.mkdir(os.path.join(root, role_dir, k), 0o700)
            made.append(os.path.join(root, role_dir, k))
    finally:
        store.restrict_to_owner(made)


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _os_error(e: OSError, what: str) -> OSError:
    """``OSError("<what>: No space left on device: /path")``: one line naming the file, same errno."""
    text = e.strerror or str(e)
    err = OSError(f"{what}: {text}: {e.filename}" if e.filename else f"{what}: {text}")
    err.errno = e.errno
    return err


def _path_with(cwd: str, path: str, first: bool) -> str:
    """``path`` with ``cwd`` appended (or put first), as the replica's ``PATH``."""
    entries = [p for p in path.split(os.pathsep) if p]
    return os.pathsep.join([cwd, *entries] if first else [*entries, cwd])


def _reap() -> None:
    launch = sys.modules.get("torchx_sched_local.launch")
    if launch is not None:
        launch.reap_children()


def _name_left_running(st: dict[str, Any] | None) -> dict[str, Any] | None:
    """``st`` with the processes its job left running (daemons that left their replica's session,
    or ones that could not be killed) named in its message, if they still run."""
    if st is None or not st.get("left_running"):
        return st
    from torchx_sched_local.sessions import start_time

    live = [pid for pid, started in st["left_running"] if start_time(pid) == started]
    if live:
        note = (
            f"processes its replicas started still run: pids {', '.join(map(str, live))}"
            " (they left the job's session, e.g. daemons, or could not be killed; `kill` them)"
        )
        st["msg"] = f"{st['msg']}; {note}" if st.get("msg") else note
    return st


def _handed_over(st: dict[str, Any] | None) -> dict[str, Any] | None:
    """``st`` of a job whose lock a live process holds: one still SUBMITTED reads RUNNING.

    A local job never queues: once recorded it is its supervisor's, which starts its replicas
    at once, so it reads RUNNING right after ``submit`` as in TorchX 0.7 (where ``submit``
    starts the processes itself); only the supervisor's first write would say so otherwise.
    """
    if st is not None and st["state"] == "SUBMITTED":
        st["state"] = "RUNNING"
    return st


def _supervisor_gone(st: dict[str, Any]) -> bool:
    """True if the supervisor ``st`` names has exited (a pid not yet recorded: False)."""
    from torchx_sched_local.sessions import alive

    pid = st.get("pid")
    return isinstance(pid, int) and not alive(pid)


def _supervisor_died(st: dict[str, Any]) -> str:
    pid = st.get("pid")
    return f"the job's supervisor{f' (pid {pid})' if pid else ''} died before the job ended"


def _to_ns(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1e9)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_supervisor(job_dir: str, pid: int) -> bool:
    """Sends SIGTERM to the supervisor ``pid`` if it still is the job's supervisor; True if sent."""
    import signal

    fd = pidfd(pid)
    try:
        if not store.lock_is_held(job_dir):
            return False
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if fd is not None:
            os.close(fd)


def create_scheduler(
    session_name: str,
    cache_size: int = 100,
    extra_paths: list[str] | None = None,
    image_provider_class: Callable[[Mapping[str, CfgVal]], Any] | None = None,
    state_dir: str | None = None,
    **kwargs: Any,
) -> LocalScheduler:
    """The ``local_cwd`` scheduler (TorchX's parameters, see :class:`LocalScheduler`; other
    keyword arguments, meant for other schedulers, are ignored)."""
    return LocalScheduler(
        session_name,
        image_provider_class=image_provider_class,
        cache_size=cache_size,
        extra_paths=extra_paths,
        state_dir=state_dir,
    )


def _is_time(value: object) -> bool:
    """True for a number of seconds since the epoch (a state file's times; not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
