"""The submit pipeline: the one way from an :class:`AppDef` to a scheduler.

Every path goes through :func:`dryrun` and :func:`schedule`: ``Runner.dryrun``/``run``/
``run_component``/``schedule``, ``Scheduler.submit_dryrun``/``submit``, sweeps (each trial, and
:func:`array_dryrun` for a native job array) and managed attempts (through the Runner; a job that
recovers inside its scheduler through :func:`recovery_dryrun` of such a dry run). A
site policy installed as a ``torchx_pre_submit`` hook cannot be bypassed by calling the
scheduler directly. In order, :func:`dryrun`:

1. resolves ``cfg`` against ``scheduler.run_opts()`` (a wrong option is reported first, as in TorchX);
2. checks the app's shape (:func:`torchx.specs.validation.validate_app`);
3. works on a deep copy from here on and lets the caller amend it (the Runner adds its
   environment variables). As TorchX, ``Runner.dryrun``/``run`` and ``Scheduler.submit``
   (``update_caller``) also change the caller's AppDef: the amendment is made on it (then
   copied), and a workspace given as argument that is built sets its first role's image;
   nothing else (the hooks' changes) reaches it;
4. calls the ``torchx_pre_submit`` hooks, once per submission; they may amend or reject the
   app, and an amended app is checked again;
5. refuses what ``scheduler.capabilities`` does not declare (:func:`check_capabilities`);
6. the workspace rule: a ``workspace`` argument goes to the first role, unless that role has
   a workspace of its own; when the scheduler builds workspaces (``WorkspaceMixin``),
   ``_pre_build_validate`` runs, then every role's workspace is built; a scheduler that
   builds none ignores workspaces. A dry run asked not to build (``build=False``: ``torchx run
   --dryrun``) describes the builds instead (:meth:`~torchx.workspace.api.WorkspaceMixin.describe_workspaces`,
   kept in :attr:`AppDryRunInfo.workspace_builds`); such a dry run cannot be scheduled;
7. ``scheduler._validate(app, scheduler_name, cfg)`` (through ``Scheduler.submit``/``submit_dryrun``
   only a scheduler's own ``_validate``: TorchX calls none there, and the base one only checks
   that every role has a resource);
8. ``scheduler._submit_dryrun(app, cfg)``, then each role's ``pre_proc``;
9. fills the :class:`AppDryRunInfo` (``app``, ``cfg``, ``scheduler``, parent run id): here only.

:func:`schedule` refuses an app with two roles of one name (a dry run shows it, as TorchX's),
submits a dry run's request and calls the ``torchx_post_submit`` hooks once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar

from torchx.schedulers.calls import call_declared, workspace_of
from torchx.schedulers.capabilities import UnsupportedFeatureError
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.handles import make_app_handle
from torchx.specs.roles import AppDef
from torchx.specs.runopts import CfgVal
from torchx.specs.validation import check_unique_role_names, validate_app
from torchx.specs.workspace import Workspace
from torchx.util.record import deep_copy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers.api import Scheduler
    from torchx.schedulers.recovery import RecoveryPolicy


def check_capabilities(app: AppDef, scheduler: Scheduler[Any, Any, Any]) -> None:
    """Refuses what the app needs and ``scheduler.capabilities`` does not declare (a scheduler that
    declares nothing is handed everything); warns where it runs the app in a weaker form.

    Raises:
        UnsupportedFeatureError: which role needs what, and what the scheduler supports
    """
    caps = scheduler.capabilities
    for role in app.roles:
        where = f"role {role.name!r}"
        if role.max_retries > 0 and role.retry_policy not in caps.retry_policies:
            supported = ", ".join(sorted(p.value for p in caps.retry_policies)) or "none"
            raise UnsupportedFeatureError(
                f"{where}: scheduler {scheduler.backend!r} does not support retry_policy"
                f" {role.retry_policy.value} (supported: {supported})"
            )
        for mount in role.mounts:
            kind = type(mount).__name__.replace("Mount", "").lower()
            if kind not in caps.mounts:
                raise UnsupportedFeatureError(
                    f"{where}: scheduler {scheduler.backend!r} does not support {kind} mounts"
                    f" (supported: {', '.join(sorted(caps.mounts)) or 'none'})"
                )
        if role.min_replicas is not None and role.min_replicas < role.num_replicas and not caps.elastic:
            import logging

            logging.getLogger(__name__).warning(
                "%s: scheduler %s is not elastic; running exactly num_replicas=%d",
                where,
                scheduler.backend,
                role.num_replicas,
            )


def _stamp(
    info: AppDryRunInfo[Any],
    app: AppDef | None,
    cfg: Mapping[str, CfgVal],
    scheduler_name: str,
    parent_run_id: str | None,
    workspace_builds: list[str] | None = None,
) -> AppDryRunInfo[Any]:
    """Sets the fields of a dry run (the one place they are set)."""
    info._app = app
    info._workspace_builds = workspace_builds or []
    info._cfg = cfg
    info._scheduler = scheduler_name
    info._parent_run_id = parent_run_id
    return info


def dryrun(
    scheduler: Scheduler[Any, Any, Any],
    app: AppDef,
    cfg: Mapping[str, CfgVal] | None = None,
    *,
    scheduler_name: str | None = None,
    workspace: Workspace | str | None = None,
    parent_run_id: str | None = None,
    amend: Callable[[AppDef], None] | None = None,
    build: bool = True,
    validate: bool = True,
    own_submit_dryrun: bool = True,
    update_caller: bool = False,
) -> AppDryRunInfo[Any]:
    """The request ``scheduler`` would submit for ``app``, through every step above.

    Args:
        scheduler: the scheduler instance
        app: the app (not changed, unless ``update_caller``)
        cfg: run options (resolved here)
        scheduler_name: the name it is registered under (default ``scheduler.backend``)
        workspace: the workspace of the first role, unless it has its own
        parent_run_id: the tracker parent run id recorded in the result
        amend: called with the copy of ``app`` before the hooks (the Runner adds env vars)
        build: build the workspaces (False: describe what would be built; nothing is built)
        validate: call ``scheduler._validate`` (``Scheduler.submit``/``submit_dryrun`` pass
            False for a scheduler that keeps the base one: TorchX calls none there)
        own_submit_dryrun: let a scheduler that overrides ``submit_dryrun`` make the request
            with it (False: ``Scheduler.submit_dryrun`` itself, the override's ``super()``)
        update_caller: change ``app`` as TorchX's ``Runner.dryrun`` and ``Scheduler.submit`` do:
            ``amend`` is made on it, and the image built from ``workspace`` is set on its first role

    Raises:
        AppDefError: the app is malformed
        SubmissionRejected: a plugin's policy refused the app
        UnsupportedFeatureError: the app needs something the scheduler cannot do
        InvalidRunConfigException: a run option is wrong
    """
    from torchx.plugins.events import run_pre_submit

    name = scheduler_name or scheduler.backend
    resolved = scheduler.run_opts().resolve(cfg or {})  # first, as TorchX: a wrong option before a wrong app
    validate_app(app)
    caller = app
    if amend is not None and update_caller:
        amend(caller)
    app = deep_copy(caller)
    if amend is not None and not update_caller:
        amend(app)
    app = run_pre_submit(app, name, cfg or {})
    validate_app(app)
    check_capabilities(app, scheduler)
    builder = workspace_of(scheduler)
    builds: list[str] = []
    if builder is not None:
        from_argument = workspace is not None and app.roles[0].workspace is None
        if from_argument:
            app.roles[0].workspace = Workspace.from_str(workspace) if isinstance(workspace, str) else workspace
        call_declared(scheduler._pre_build_validate, app, name, resolved)
        if build:
            if from_argument:  # built from the workspace now, also on an image built from it before
                builder.forget_build(app.roles[0])
            builder.build_workspaces(app.roles, resolved)
            if update_caller and from_argument and caller.roles:
                caller.roles[0].image = app.roles[0].image
        else:
            builds = builder.describe_workspaces(app.roles, resolved)
    if validate:
        call_declared(scheduler._validate, app, name, resolved)
    if own_submit_dryrun and _overrides_submit_dryrun(scheduler):
        # an upstream-style scheduler that overrides submit_dryrun itself: TorchX's Runner calls
        # it, so do we; its super().submit_dryrun is then TorchX's base one (request_of)
        token = _IN_OVERRIDE.set(True)
        try:
            info = scheduler.submit_dryrun(app, resolved)
        finally:
            _IN_OVERRIDE.reset(token)
    else:
        info = request_of(scheduler, app, resolved)
    return _stamp(info, app, resolved, name, parent_run_id, builds)


#: True while :func:`dryrun` runs a scheduler's own ``submit_dryrun``
_IN_OVERRIDE: ContextVar[bool] = ContextVar("torchx_in_submit_dryrun_override", default=False)


def _overrides_submit_dryrun(scheduler: Scheduler[Any, Any, Any]) -> bool:
    """True if ``submit_dryrun`` is defined below the ``Scheduler`` base class, or the scheduler
    is no ``Scheduler`` subclass at all (a duck-typed one: its ``submit_dryrun`` is all it has)."""
    owner = next((k for k in type(scheduler).__mro__ if "submit_dryrun" in vars(k)), None)
    return owner is None or owner.__module__ != "torchx.schedulers.api"


def inside_submit_dryrun_override() -> bool:
    """True when called (as ``super().submit_dryrun``) from a scheduler's own ``submit_dryrun``
    that :func:`dryrun` runs: the base then only builds the request (:func:`request_of`)."""
    return _IN_OVERRIDE.get()


def request_of(scheduler: Scheduler[Any, Any, Any], app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
    """The scheduler's request for a complete app and resolved ``cfg``: ``_submit_dryrun``, then
    each role's ``pre_proc`` (TorchX's ``Scheduler.submit_dryrun`` without its cfg resolution)."""
    info = scheduler._submit_dryrun(app, cfg)
    for role in app.roles:
        info = role.pre_proc(scheduler.backend, info)
    return info


def array_dryrun(
    scheduler: Scheduler[Any, Any, Any], infos: Sequence[AppDryRunInfo[Any]], max_parallel: int | None = None
) -> AppDryRunInfo[Any] | None:
    """One job-array request running the apps of ``infos`` (dry runs of :func:`dryrun`, one
    scheduler, one cfg) as its elements, or None when the scheduler cannot (no job arrays, or
    not for these apps: then submit each dry run)."""
    if not infos or not scheduler.capabilities.job_arrays:
        return None
    apps = [info.app for info in infos if info.app is not None]
    try:
        request = scheduler.submit_array_dryrun(apps, infos[0].cfg, max_parallel)
    except UnsupportedFeatureError:
        return None
    request._elements = apps
    return _stamp(request, None, infos[0].cfg, infos[0].scheduler or scheduler.backend, infos[0]._parent_run_id)


def recovery_dryrun(
    scheduler: Scheduler[Any, Any, Any], info: AppDryRunInfo[Any], policy: RecoveryPolicy
) -> AppDryRunInfo[Any]:
    """The request that runs the app of ``info`` (a dry run of :func:`dryrun`) and recovers it by
    ``policy`` inside the backend (``Scheduler.submit_recovery_dryrun``).

    Raises:
        UnsupportedFeatureError: the scheduler cannot recover natively, or not this app or policy
    """
    if not scheduler.capabilities.recovery or info.app is None:
        raise UnsupportedFeatureError(f"scheduler {scheduler.backend!r} cannot recover jobs by itself")
    request = scheduler.submit_recovery_dryrun(info.app, info.cfg, policy)
    return _stamp(request, info.app, info.cfg, info.scheduler or scheduler.backend, info._parent_run_id)


def schedule(scheduler: Scheduler[Any, Any, Any], info: AppDryRunInfo[Any], session_name: str) -> str:
    """Submits the request of a dry run and calls the ``torchx_post_submit`` hooks (for a job
    array, once per element); returns the app id."""
    from torchx.plugins.events import run_post_submit

    if info.workspace_builds:
        raise ValueError(
            "this dry run did not build its workspaces, so it cannot be submitted; dry-run again with"
            " workspaces built (Runner.dryrun builds them; `torchx run` without --dryrun)"
        )
    name = info.scheduler or scheduler.backend
    if info.app is not None:
        check_unique_role_names(info.app)
    app_id = scheduler.schedule(info)
    if info.app is not None:
        run_post_submit(make_app_handle(name, session_name, app_id), info.app, name, info.cfg)
    for i, element in enumerate(getattr(info, "_elements", ())):
        element_id = scheduler.array_element_id(app_id, i)
        run_post_submit(make_app_handle(name, session_name, element_id), element, name, info.cfg)
    return app_id
