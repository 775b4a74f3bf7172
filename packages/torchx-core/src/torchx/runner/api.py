"""The :class:`Runner` and :func:`get_runner`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from torchx.runner.events import log_event
from torchx.schedulers import get_scheduler_factories
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.calls import call_declared
from torchx.schedulers.capabilities import UnsupportedFeatureError
from torchx.schedulers.streams import Stream
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.handles import (
    AppHandle,
    UnknownAppException,
    UnknownSchedulerException,
    make_app_handle,
    parse_app_handle,
)
from torchx.specs.roles import NONE, AppDef
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppStatus
from torchx.specs.validation import AppDefError as AppDefError  # re-exported: raised by Runner.dryrun
from torchx.specs.validation import validate_app as validate_app
from torchx.specs.workspace import Workspace
from torchx.util.suggest import did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from torchx.schedulers import SchedulerFactory

ENV_SESSION_ID = "TORCHX_INTERNAL_SESSION_ID"
ENV_JOB_ID = "TORCHX_JOB_ID"


def configured_trackers() -> dict[str, str | None]:
    """Tracker name -> config the launched job gets, as TorchX computes them.

    Names: the keys of ``[torchx:tracker]``, replaced by ``$TORCHX_TRACKERS`` (comma-separated)
    when that is set in the launcher's environment. Config of each: ``[tracker:<name>] config``,
    replaced by ``$TORCHX_TRACKER_<NAME>_CONFIG`` when set.
    """
    import os

    from torchx.runner import config
    from torchx.tracker.env import ENV_TORCHX_TRACKERS, tracker_config_env_var_names

    names = list(config.get_configs("torchx", "tracker"))
    if ENV_TORCHX_TRACKERS in os.environ:
        names = os.environ[ENV_TORCHX_TRACKERS].split(",")
    trackers: dict[str, str | None] = {}
    for name in names:
        value = config.get_config("tracker", name, "config")
        for var in tracker_config_env_var_names(name):
            if var in os.environ:
                value = os.environ[var]
                break
        trackers[name] = value
    return trackers


def _tracker_env(parent_run_id: str | None) -> dict[str, str]:
    """The tracking variables every role of a submitted app gets (they override the role's own)."""
    import os

    from torchx.tracker.env import ENV_TORCHX_PARENT_RUN_ID, ENV_TORCHX_TRACKERS, tracker_config_env_var_name

    env: dict[str, str] = {}
    parent_run_id = os.environ.get(ENV_TORCHX_PARENT_RUN_ID, parent_run_id)
    if parent_run_id:
        env[ENV_TORCHX_PARENT_RUN_ID] = parent_run_id
    trackers = configured_trackers()
    if trackers:
        env[ENV_TORCHX_TRACKERS] = ",".join(trackers)
    for name, value in trackers.items():
        if value:
            env[tracker_config_env_var_name(name)] = value
    return env


class Runner:
    """Submits apps to schedulers and manages them by app handle.

    Use :func:`get_runner`; close it (or use it as a context manager) when done.
    ``.torchxconfig`` run options apply to every submission (see :mod:`torchx.runner.config`).
    """

    def __init__(
        self,
        name: str = "torchx",
        scheduler_factories: Mapping[str, SchedulerFactory] | None = None,
        component_defaults: Mapping[str, Mapping[str, str]] | None = None,
        scheduler_params: Mapping[str, object] | None = None,
    ) -> None:
        self._name = name
        self._factories: dict[str, SchedulerFactory] | None = dict(scheduler_factories) if scheduler_factories else None
        self._component_defaults = {k: dict(v) for k, v in (component_defaults or {}).items()}
        self._scheduler_params = dict(scheduler_params or {})
        self._schedulers: dict[str, Scheduler[Any, Any, Any]] = {}
        self._apps: dict[AppHandle, AppDef] = {}

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes every scheduler this runner opened."""
        for scheduler in self._schedulers.values():
            scheduler.close()
        self._schedulers.clear()

    def name(self) -> str:
        """The session name (the middle part of app handles)."""
        return self._name

    # ------------------------------------------------------------------ schedulers
    def _all_factories(self) -> dict[str, SchedulerFactory]:
        if self._factories is None:
            self._factories = get_scheduler_factories()
        return self._factories

    def scheduler_backends(self) -> list[str]:
        """Names of the schedulers this runner can use."""
        return sorted(self._all_factories())

    def get_scheduler(self, name: str) -> Scheduler[Any, Any, Any]:
        """This runner's instance of scheduler ``name`` (made on first use, closed by :meth:`close`).

        Raises:
            UnknownSchedulerException: no such scheduler is installed (the message says which
                package provides it, or why its plugin failed to load)
        """
        scheduler = self._schedulers.get(name)
        if scheduler is not None:
            return scheduler
        factories = self._all_factories()
        factory = factories.get(name)
        if factory is None:
            from torchx.plugins import get_registry
            from torchx.schedulers import KNOWN_SCHEDULER_PACKAGES

            failed = get_registry().failures_for("schedulers", name)
            if failed:
                hint = " " + "; ".join(f"Plugin {p.dist} {p.version} failed to load: {p.errors[0]}." for p in failed)
            else:
                package = KNOWN_SCHEDULER_PACKAGES.get(name)
                from torchx.util.distributions import pip_install

                hint = f" It is provided by `{pip_install(package)}`." if package else ""
            installed = ", ".join(sorted(factories)) or "none"
            raise UnknownSchedulerException(
                f"unknown scheduler {name!r}.{did_you_mean(name, factories)}{hint} Installed: {installed}"
            )
        scheduler = factory(self._name, **self._scheduler_params)
        self._schedulers[name] = scheduler
        return scheduler

    def scheduler_run_opts(self, scheduler: str) -> runopts:
        """The run options of ``scheduler``."""
        return self.get_scheduler(scheduler).run_opts()

    def cfg_from_str(self, scheduler: str, *cfg_literal: str) -> Mapping[str, CfgVal]:
        """Parses ``"k=v,k2=v2"`` strings into typed run options of ``scheduler``."""
        opts = self.scheduler_run_opts(scheduler)
        cfg: dict[str, CfgVal] = {}
        for literal in cfg_literal:
            cfg.update(opts.cfg_from_str(literal))
        return cfg

    # ------------------------------------------------------------------ submitting
    def run_component(
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppHandle:
        """Materializes ``component`` with ``component_args`` and submits it; returns the handle."""
        info = self.dryrun_component(component, component_args, scheduler, cfg, workspace, parent_run_id)
        return self.schedule(info)

    def dryrun_component(
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        build_workspace: bool = True,
    ) -> AppDryRunInfo[Any]:
        """The request :meth:`run_component` would submit (``build_workspace``: see :meth:`dryrun`)."""
        app = self.component_app(component, component_args)
        return self.dryrun(app, scheduler, cfg, workspace, parent_run_id, build_workspace=build_workspace)

    def component_app(self, component: str, component_args: list[str] | dict[str, Any]) -> AppDef:
        """The :class:`AppDef` a component makes from its arguments (CLI-style list or a dict)."""
        from torchx.runner import config
        from torchx.specs.builders import materialize_appdef
        from torchx.specs.finder import get_component

        fn = get_component(component).fn
        from_files = config.get_configs("component", component)
        if from_files:
            _warn_unknown_component_keys(component, fn, from_files)
        defaults = {**from_files, **self._component_defaults.get(component, {})}
        if isinstance(component_args, dict):
            return materialize_appdef(fn, [], defaults, config=component_args)
        return materialize_appdef(fn, list(component_args), defaults)

    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppHandle:
        """Submits ``app`` and returns the app handle (``app`` is changed as by :meth:`dryrun`)."""
        return self.schedule(self.dryrun(app, scheduler, cfg, workspace, parent_run_id))

    def dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        build_workspace: bool = True,
    ) -> AppDryRunInfo[Any]:
        """What :meth:`run` would submit: checks the app, applies config and plugins, builds the request.

        As in TorchX, the workspace is built (an image built, a directory copied) so that
        :meth:`schedule` can submit the result. With ``build_workspace=False`` nothing is built:
        the result's ``workspace_builds`` says what would be, and it cannot be scheduled.

        As in TorchX, ``app`` itself is changed: every role's ``env`` gets ``TORCHX_JOB_ID``, the
        tracker variables (``TORCHX_TRACKERS``, ``TORCHX_TRACKER_<NAME>_CONFIG``,
        ``TORCHX_PARENT_RUN_ID``) and ``TORCHX_INTERNAL_SESSION_ID``, and the first role's
        ``image`` is the one built from ``workspace``. Pass a copy to keep yours as it is.

        Raises:
            AppDefError: the app is malformed
            UnknownSchedulerException: no such scheduler is installed
            InvalidRunConfigException: a run option is wrong
            UnsupportedFeatureError: the app needs something the scheduler cannot do
            SubmissionRejected: a plugin's policy refused the app
        """
        from torchx.runner import config
        from torchx.schedulers import submission

        with log_event("dryrun", scheduler, workspace=None if workspace is None else str(workspace)):
            sched = self.get_scheduler(scheduler)
            merged_cfg: dict[str, CfgVal] = dict(cfg or {})
            config.apply_files(scheduler, sched.run_opts(), merged_cfg)
            env = {ENV_JOB_ID: make_app_handle(scheduler, self._name, "${app_id}"), **_tracker_env(parent_run_id)}

            def add_env(target: AppDef) -> None:
                for role in target.roles:
                    role.env = {ENV_SESSION_ID: self._name, **role.env, **env}

            return submission.dryrun(
                sched,
                app,
                merged_cfg,
                scheduler_name=scheduler,
                workspace=workspace,
                parent_run_id=parent_run_id,
                amend=add_env,
                build=build_workspace,
                update_caller=True,
            )

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> AppHandle:
        """Submits the request of a dry run; returns the app handle."""
        from torchx.schedulers import submission

        scheduler = dryrun_info.scheduler
        if scheduler is None:
            raise ValueError("this AppDryRunInfo did not come from a dry run: it names no scheduler")
        with log_event("schedule", scheduler) as event:
            app_id = submission.schedule(self.get_scheduler(scheduler), dryrun_info, self._name)
            event.event.app_id = app_id
        handle = make_app_handle(scheduler, self._name, app_id)
        if dryrun_info.app is not None:
            self._apps[handle] = dryrun_info.app
        return handle

    # ------------------------------------------------------------------ managing
    def resolve(self, app_handle: AppHandle) -> tuple[Scheduler[Any, Any, Any], str]:
        """The scheduler instance (this runner's) and the app id an app handle names.

        Raises:
            MalformedAppHandleException: not an app handle
            UnknownSchedulerException: its scheduler is not installed
        """
        parsed = parse_app_handle(app_handle)
        return self.get_scheduler(parsed.scheduler_backend), parsed.app_id

    def describe_app(self, app_handle: AppHandle) -> DescribeAppResponse | None:
        """The scheduler's raw description of the app, or None if unknown."""
        scheduler, app_id = self.resolve(app_handle)
        return scheduler.describe(app_id)

    def status(self, app_handle: AppHandle) -> AppStatus | None:
        """The app's status, or None if the scheduler does not know it."""
        scheduler, app_id = self.resolve(app_handle)
        with log_event("status", scheduler.backend, app_id):
            desc = scheduler.describe(app_id)
        return None if desc is None else _to_status(desc)

    def wait(self, app_handle: AppHandle, wait_interval: float = 10, timeout: float | None = None) -> AppStatus | None:
        """Blocks until the app ends (or ``timeout`` s pass); returns its last status.

        Schedulers that know when an app ends react at once; others are polled, at most
        ``wait_interval`` seconds apart.
        """
        scheduler, app_id = self.resolve(app_handle)
        with log_event("wait", scheduler.backend, app_id):
            desc = scheduler.wait(app_id, timeout=timeout, poll_interval=wait_interval)
        return None if desc is None else _to_status(desc)

    def cancel(self, app_handle: AppHandle) -> None:
        """Stops the app (no-op if it ended or is unknown); it stays describable."""
        scheduler, app_id = self.resolve(app_handle)
        if not scheduler.capabilities.cancel:
            raise UnsupportedFeatureError(f"scheduler {scheduler.backend!r} cannot cancel apps")
        with log_event("cancel", scheduler.backend, app_id):
            scheduler.cancel(app_id)

    def stop(self, app_handle: AppHandle) -> None:
        """Deprecated: use :meth:`cancel`."""
        import warnings

        warnings.warn("Runner.stop is deprecated; use Runner.cancel", DeprecationWarning, stacklevel=2)
        self.cancel(app_handle)

    def delete(self, app_handle: AppHandle) -> None:
        """Stops the app and removes every trace of it from the scheduler."""
        scheduler, app_id = self.resolve(app_handle)
        scheduler.delete(app_id)
        self._apps.pop(app_handle, None)

    def describe(self, app_handle: AppHandle) -> AppDef | None:
        """The app's definition: as submitted if this runner submitted it, else as reconstructed."""
        if app_handle in self._apps:
            return self._apps[app_handle]
        scheduler, app_id = self.resolve(app_handle)
        with log_event("describe", scheduler.backend, app_id):
            desc = scheduler.describe(app_id)
        if desc is None:
            return None
        return AppDef(name=desc.app_id, roles=list(desc.roles), metadata=dict(desc.metadata))

    def list(self, scheduler: str, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The apps ``scheduler`` knows, with their handles."""
        sched = self.get_scheduler(scheduler)
        if not sched.capabilities.list:
            raise UnsupportedFeatureError(f"scheduler {scheduler!r} cannot list apps")
        with log_event("list", scheduler):
            apps = call_declared(sched.list, cfg) if cfg is not None else sched.list()
        for app in apps:
            app.app_handle = make_app_handle(scheduler, self._name, app.app_id)
        return apps

    def log_lines(
        self,
        app_handle: AppHandle,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Log lines of replica ``k`` of ``role_name``, as the scheduler has them.

        Each line ends with its ``\\n``, except a last line the job did not end (schedulers that
        keep the bytes, like ``local_cwd``, give it as written). Bytes that are not UTF-8 come as
        lone surrogates: ``line.encode("utf-8", "surrogateescape")`` gives back what the job wrote
        (``torchx log`` prints them so).

        Raises:
            UnknownAppException: the scheduler does not know the app
            UnsupportedFeatureError: the scheduler cannot do what is asked (tail, the stream); where it
                cannot filter by time, ``since``/``until`` are ignored with a warning, as in TorchX
        """
        scheduler, app_id = self.resolve(app_handle)
        caps = scheduler.capabilities
        if not caps.logs:
            raise UnsupportedFeatureError(f"scheduler {scheduler.backend!r} does not keep logs torchx can read")
        if (since or until) and not caps.log_since_until:  # ignored, as TorchX's schedulers do
            from torchx.schedulers.logfiles import warn_no_time_filter

            warn_no_time_filter(scheduler.backend)
            since = until = None
        if should_tail and not caps.log_tail:
            raise UnsupportedFeatureError(f"scheduler {scheduler.backend!r} cannot follow logs (--tail)")
        if streams is not None and Stream(streams).value not in caps.log_streams:
            raise UnsupportedFeatureError(
                f"scheduler {scheduler.backend!r} has no {Stream(streams).value} stream"
                f" (it has: {', '.join(sorted(caps.log_streams))})"
            )
        with log_event("log_lines", scheduler.backend, app_id):
            if scheduler.describe(app_id) is None:
                raise UnknownAppException(app_handle)
            return scheduler.log_iter(app_id, role_name, k, regex, since, until, should_tail, streams=streams)


def _warn_unknown_component_keys(component: str, fn: Any, values: Mapping[str, str]) -> None:
    """Warns about ``[component:NAME]`` keys that name no argument of the component (as
    ``[<scheduler>]`` keys that name no run option), each with a "did you mean"."""
    import logging

    from torchx.specs.builders import parameters
    from torchx.util.suggest import did_you_mean

    names = [p.name for p in parameters(fn)]
    for key, value in values.items():
        if key not in names:
            logging.getLogger(__name__).warning(
                "`%s = %s` in the [component:%s] section of .torchxconfig is not an argument of %s.%s"
                " Remove it to silence this warning",
                key,
                value,
                component,
                component,
                did_you_mean(key, names),
            )


def _to_status(desc: DescribeAppResponse) -> AppStatus:
    return AppStatus(
        state=desc.state,
        num_restarts=max(desc.num_restarts, 0),
        msg="" if desc.msg == NONE else desc.msg,
        structured_error_msg=desc.structured_error_msg,
        ui_url=desc.ui_url,
        roles=list(desc.roles_statuses),
    )


def get_runner(
    name: str | None = None,
    component_defaults: Mapping[str, Mapping[str, str]] | None = None,
    **scheduler_params: Any,
) -> Runner:
    """A :class:`Runner` for every installed scheduler.

    Args:
        name: session name (default ``torchx``)
        component_defaults: ``{component: {arg: value}}`` defaults for components
        scheduler_params: passed to every scheduler's factory
    """
    return Runner(name or "torchx", None, component_defaults, scheduler_params)
