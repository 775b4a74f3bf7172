"""The :class:`Scheduler` interface every backend implements, and its response types."""

from __future__ import annotations

import abc
import builtins
import time
from collections.abc import Iterable, Mapping, Sequence

from torchx.schedulers.calls import workspace_of
from torchx.schedulers.capabilities import SchedulerCapabilities, UnsupportedFeatureError
from torchx.schedulers.streams import Stream, filter_regex, split_lines, split_lines_iterator
from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import NONE, NULL_RESOURCE, AppDef, RetryPolicy, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, RoleStatus, is_terminal
from torchx.specs.workspace import Workspace
from torchx.util.record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, ClassVar, Generic

    from typing_extensions import TypeVar  # type variables with defaults (PEP 696)

    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy
else:
    from torchx.util.runtime_typing import Any, Generic, TypeVar

__all__ = [
    "DescribeAppResponse",
    "ListAppResponse",
    "Scheduler",
    "SchedulerCapabilities",
    "Stream",
    "StructuredOpts",
    "UnsupportedFeatureError",
    "filter_regex",
    "split_lines",
    "split_lines_iterator",
]


#: what a scheduler that declares no ``capabilities`` (one written for upstream TorchX, which has
#: no such declaration) is trusted with: every request is passed on, as upstream does
UNDECLARED_CAPABILITIES = SchedulerCapabilities(
    log_since_until=True,
    log_streams=frozenset({"stdout", "stderr", "combined"}),
    retry_policies=frozenset(RetryPolicy),
    elastic=True,
    mounts=frozenset({"bind", "volume", "device"}),
)

T = TypeVar("T")  # run config
A = TypeVar("A", default=AppDef)  # app; ``Scheduler[Cfg]`` (one argument, as upstream) type-checks too
D = TypeVar("D", default=Any)  # dryrun request


@record
class DescribeAppResponse:
    """What ``Scheduler.describe`` returns about an app.

    ``roles`` is the app's roles as far as the scheduler can reconstruct them;
    ``roles_statuses`` the per-replica states. A scheduler that runs the app as a series of
    attempts (``managed``) lists them in ``metadata["attempts"]``: dicts with ``attempt``,
    ``handle``, ``scheduler``, ``state``, ``cause``, ``exit_code``, ``reason``, ``started`` and
    ``ended`` (epoch seconds), which ``torchx status`` shows.
    """

    app_id: str = "<NOT_SET>"
    state: AppState = AppState.UNSUBMITTED
    num_restarts: int = -1
    msg: str = NONE
    structured_error_msg: str = NONE
    ui_url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    roles_statuses: list[RoleStatus] = field(default_factory=list)
    roles: list[Role] = field(default_factory=list)


@record(unsafe_hash=True)
class ListAppResponse:
    """One app in ``Scheduler.list``.

    ``name`` (the app's name), ``submitted``, ``started`` and ``ended`` (seconds since the
    epoch) are set where the scheduler knows them (None otherwise); they do not count for ``==``
    or the hash, so a response compares as in TorchX 0.7 (``app_id``, ``state``, ``app_handle``).
    """

    app_id: str
    state: AppState
    app_handle: str = "<NOT_SET>"
    name: str = field(default="", compare=False)
    submitted: float | None = field(default=None, compare=False)
    started: float | None = field(default=None, compare=False)
    ended: float | None = field(default=None, compare=False)


class Scheduler(abc.ABC, Generic[T, A, D]):
    """A backend that runs apps: turns an :class:`AppDef` into a native request and manages it.

    Implement ``_submit_dryrun``, ``schedule``, ``describe``, ``list`` and
    ``_cancel_existing``; optionally ``_run_opts``, ``log_iter``, ``wait``, ``close``,
    ``_validate``, ``_pre_build_validate``, ``_delete_existing`` and ``end_cause`` (why an app
    ended, see :mod:`torchx.schedulers.causes`); with
    ``capabilities.job_arrays``, ``submit_array_dryrun`` and ``array_element_id``; with
    ``capabilities.end_fd``, ``end_fd`` (a descriptor readable when an app ends). Declare what
    the backend supports in the class attribute ``capabilities`` (a scheduler that declares
    nothing, as one written for upstream TorchX, is handed every request).

    Schedulers written for TorchX 0.7 run unchanged: ``Scheduler[CfgType]`` with one type
    argument, ``list(self)`` without ``cfg`` and ``_validate(self, app, scheduler)`` without
    ``cfg`` are called as declared (see :func:`torchx.schedulers.calls.call_declared`).
    """

    capabilities: ClassVar[SchedulerCapabilities] = UNDECLARED_CAPABILITIES

    def __init__(self, backend: str, session_name: str) -> None:
        self.backend = backend
        self.session_name = session_name

    def close(self) -> None:
        """Releases clients and connections; the scheduler is not used afterwards."""

    def submit(self, app: AppDef, cfg: T, workspace: Workspace | str | None = None) -> str:
        """Submits ``app`` and returns its app id: :meth:`submit_dryrun`, then :meth:`schedule`,
        through the submit pipeline (:mod:`torchx.schedulers.submission`), as ``Runner.run`` does.
        As in TorchX, a ``workspace`` that is built sets the image of ``app``'s first role."""
        from torchx.schedulers import submission

        own_validate = self._own_validate()
        info = submission.dryrun(self, app, cfg, workspace=workspace, validate=own_validate, update_caller=True)  # type: ignore[arg-type]
        return submission.schedule(self, info, self.session_name)

    @abc.abstractmethod
    def schedule(self, dryrun_info: AppDryRunInfo[D]) -> str:
        """Submits the request of a dry run; returns the app id."""

    def submit_dryrun(self, app: AppDef, cfg: T) -> AppDryRunInfo[D]:
        """The native request for ``app`` with ``cfg``, through the submit pipeline (validation,
        capabilities, policy hooks, ``_validate``, ``_submit_dryrun``, roles' ``pre_proc``; see
        :mod:`torchx.schedulers.submission`)."""
        from torchx.schedulers import submission

        if submission.inside_submit_dryrun_override():  # super() of a subclass's own, run by the pipeline
            return submission.request_of(self, app, self.run_opts().resolve(cfg))  # type: ignore[arg-type]
        # here directly, or as super() of a subclass's own called directly: not that one again
        return submission.dryrun(self, app, cfg, validate=self._own_validate(), own_submit_dryrun=False)  # type: ignore[arg-type]

    def _own_validate(self) -> bool:
        """Whether this scheduler has a ``_validate`` of its own. ``submit``/``submit_dryrun`` call
        only such one: TorchX calls none there, and the base one only checks that every role
        has a resource (the Runner's paths still do)."""
        return type(self)._validate is not Scheduler._validate

    @abc.abstractmethod
    def _submit_dryrun(self, app: AppDef, cfg: T) -> AppDryRunInfo[D]:
        """Builds the native request for ``app`` (``cfg`` already resolved)."""

    def run_opts(self) -> runopts:
        """Every run option: the scheduler's plus its workspace's."""
        opts = self._run_opts()
        builder = workspace_of(self)
        if builder is not None:
            opts.update(builder.workspace_opts())
        return opts

    def _run_opts(self) -> runopts:
        return runopts()

    @abc.abstractmethod
    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's state, or None if the scheduler does not know it."""

    @abc.abstractmethod
    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The apps the scheduler knows (of this user where it can tell)."""

    def exists(self, app_id: str) -> bool:
        """True if the scheduler knows the app."""
        return self.describe(app_id) is not None

    @abc.abstractmethod
    def _cancel_existing(self, app_id: str) -> None:
        """Stops an app that exists; its record stays for describe/logs."""

    def cancel(self, app_id: str) -> None:
        """Stops the app if it exists and has not ended (no-op otherwise)."""
        if self.exists(app_id):
            self._cancel_existing(app_id)

    def _delete_existing(self, app_id: str) -> None:
        self._cancel_existing(app_id)

    def delete(self, app_id: str) -> None:
        """Stops the app and removes every trace of it from the scheduler."""
        if self.exists(app_id):
            self._delete_existing(app_id)

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
        """Lines (with their ``\\n``) of replica ``k`` of ``role_name``.

        Args:
            app_id: the app
            role_name: the role
            k: the replica index
            regex: only lines matching it
            since: only lines written at or after it
            until: only lines written before it
            should_tail: keep following until the replica ends
            streams: which output; None: all of it, stdout and stderr together (every
                scheduler; see the README's "Logs"), like ``Stream.COMBINED``
        """
        raise UnsupportedFeatureError(f"scheduler {self.backend!r} cannot read logs")

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the app ended, in core's vocabulary (optional extension point).

        Contract:

        1. Called only for an app whose :meth:`describe` state is terminal; for one that is
           still running, or unknown to the scheduler, return None.
        2. Answer from what the backend really reports (accounting states and reasons, pod
           conditions, status reasons, exit info), never from a guess: where the backend does
           not say, return None (or ``EndCause.UNKNOWN`` with the backend's words in ``reason``).
        3. ``CANCELLED`` only for a cancel through torchx or by the owner; a signal from
           someone else is ``KILLED``; a lost node or supervisor is ``NODE_FAILURE``.
        4. Cheap enough to call once per ended app; it must not block on a running app.

        The default returns None; callers then use
        :func:`torchx.schedulers.causes.cause_from_state`.
        """
        return None

    def end_fd(self, app_id: str) -> int | None:
        """A file descriptor that becomes readable once the app ended (optional extension point,
        declared by ``capabilities.end_fd``), for a caller that waits on many apps at once with
        ``select``/``poll`` and then reads their state with :meth:`describe`.

        Contract: the caller owns the descriptor and closes it; readable means "ask
        :meth:`describe` now", never a state by itself; None whenever it cannot be had (the
        app is unknown or already ended, the platform has no such descriptor), and the caller
        then polls :meth:`describe`. The default returns None.
        """
        return None

    def wait(self, app_id: str, timeout: float | None = None, poll_interval: float = 1.0) -> DescribeAppResponse | None:
        """Blocks until the app ends (or ``timeout`` seconds pass); returns its last description.

        This default polls :meth:`describe`, starting fast and backing off to
        ``poll_interval``; schedulers that can be told of the end override it.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = min(0.05, poll_interval)
        while True:
            desc = self.describe(app_id)
            if desc is None or is_terminal(desc.state):
                return desc
            if deadline is not None and time.monotonic() >= deadline:
                return desc
            pause = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            delay = min(delay * 2, poll_interval)

    # ------------------------------------------------------------------ job arrays (optional)
    def submit_array_dryrun(self, apps: Sequence[AppDef], cfg: T, max_parallel: int | None = None) -> AppDryRunInfo[D]:
        """One native request running ``apps[i]`` as element ``i`` of a job array (optional).

        Only schedulers whose ``capabilities.job_arrays`` is True implement it (the default
        raises). Contract:

        1. ``apps`` are complete, validated apps (as :meth:`submit_dryrun` receives them, ``cfg``
           resolved); they differ only in their arguments and environment. A scheduler that
           cannot run these apps as one array (e.g. several replicas per app where arrays need
           one) raises :class:`UnsupportedFeatureError`, and the caller submits them one by one.
        2. At most ``max_parallel`` elements run at once (None: no limit). A scheduler that
           cannot throttle arrays says so in its documentation and runs them all.
        3. :meth:`schedule` of the result submits the whole array in one request and returns
           the array's app id; :meth:`array_element_id` names each element, and
           :meth:`describe`, :meth:`cancel` and :meth:`log_iter` accept those ids.
           Cancelling the array's app id stops every element.
        4. Each element's ``app_id`` macro expands to its own element id, so an element's
           ``TORCHX_JOB_ID`` (its tracker run id) is its own handle.

        Raises:
            UnsupportedFeatureError: the scheduler has no job arrays, or not for these apps
        """
        raise UnsupportedFeatureError(f"scheduler {self.backend!r} has no job arrays")

    def array_element_id(self, array_id: str, index: int) -> str:
        """The app id of element ``index`` of the job array ``array_id`` (see :meth:`submit_array_dryrun`)."""
        raise UnsupportedFeatureError(f"scheduler {self.backend!r} has no job arrays")

    # ------------------------------------------------------------------ recovery (optional)
    def submit_recovery_dryrun(self, app: AppDef, cfg: T, policy: RecoveryPolicy) -> AppDryRunInfo[D]:
        """A request that runs ``app`` and recovers it by ``policy`` inside the backend (optional).

        Only schedulers whose ``capabilities.recovery`` is True implement it (the default
        raises). Contract:

        1. ``app`` is complete and validated (as :meth:`submit_dryrun` receives it, ``cfg``
           resolved); callers go through :func:`torchx.schedulers.submission.recovery_dryrun`.
        2. The job recovers with no process of torchx's outside the backend: a lost node or a
           preemption is the backend's own requeue or retry, counted against
           ``policy.max_recoveries``; an application error restarts under
           ``policy.max_restarts`` (exit codes in ``policy.recover_on_exit_codes`` uncounted),
           waiting ``policy.restart_backoff`` seconds, doubled per error in a row.
        3. Every replica of attempt ``n`` has ``TORCHX_ATTEMPT=n`` (counted across the
           backend's requeues) and the same ``TORCHX_CHECKPOINT_DIR``.
        4. :meth:`schedule` returns an app id that alone finds the job and its attempts
           (:meth:`recovery_attempts`) from any machine that reaches the backend;
           :meth:`describe` of it is the job as a whole (terminal only when no attempt is left
           to run), :meth:`cancel` stops it for good, :meth:`log_iter` reads every attempt.

        Raises:
            UnsupportedFeatureError: the scheduler cannot recover natively, or not this app or policy
        """
        raise UnsupportedFeatureError(f"scheduler {self.backend!r} cannot recover jobs by itself")

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts of a job from :meth:`submit_recovery_dryrun`, from the backend's own
        records (None: the backend does not know the job, or it was not submitted that way).

        Raises:
            UnsupportedFeatureError: the scheduler cannot recover natively
        """
        raise UnsupportedFeatureError(f"scheduler {self.backend!r} cannot recover jobs by itself")

    def recovery_list(self) -> builtins.list[ListAppResponse]:
        """The jobs of :meth:`list` that were submitted by :meth:`submit_recovery_dryrun`.

        By default, those whose :meth:`recovery_attempts` is not None: one look per job (a job
        the backend cannot tell about is passed over with a warning). A scheduler whose ``list``
        already reads a mark of such jobs (:data:`~torchx.schedulers.recovery.RECOVERY_MARK`)
        overrides it with one pass.

        Raises:
            UnsupportedFeatureError: the scheduler cannot recover natively
        """
        if not self.capabilities.recovery:
            raise UnsupportedFeatureError(f"scheduler {self.backend!r} cannot recover jobs by itself")
        out = []
        for app in self.list():
            try:
                log = self.recovery_attempts(app.app_id)
            except Exception as e:  # one job the backend cannot tell about does not hide the others
                import logging

                text = str(e).strip()
                logging.getLogger(__name__).warning(
                    "torchx: warning: skipped %s job %s: %s",
                    self.backend,
                    app.app_id,
                    text.splitlines()[0] if text else type(e).__name__,
                )
                continue
            if log is not None:
                out.append(app)
        return out

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: T) -> None:
        """Checks ``app`` before its workspace is built."""

    def _validate(self, app: AppDef, scheduler: str, cfg: T | None = None) -> None:
        """Checks ``app`` before submission; by default every role must set its resource.

        ``cfg`` is optional: a plugin written for TorchX versions whose ``_validate`` had two
        parameters calls ``super()._validate(app, scheduler)``."""
        for role in app.roles:
            if role.resource == NULL_RESOURCE:
                raise ValueError(
                    f"role {role.name!r} has no resource: scheduler {scheduler!r} needs one;"
                    " set Role.resource, e.g. specs.resource(h='cpu.small')"
                )
