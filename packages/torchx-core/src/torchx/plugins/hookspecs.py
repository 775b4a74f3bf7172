"""The hooks a torchx plugin can implement. This module is the plugin author's reference.

A plugin is one small module registered under the entry-point group ``torchx``::

    # pyproject.toml
    [project.entry-points.torchx]
    my_plugin = "my_pkg.torchx_plugin"

    # my_pkg/torchx_plugin.py  -- import nothing heavy here
    from torchx.plugins import hookimpl, SchedulerPlugin

    @hookimpl
    def torchx_schedulers():
        yield SchedulerPlugin("my_sched", "my_pkg.scheduler:create_scheduler", "my cluster")

Registration hooks (``torchx_schedulers`` ... ``torchx_cli_commands``) describe what the
plugin provides; their results are cached until the installed packages change, so they
must not depend on the environment. Event hooks run when the event happens.

How event hooks (``torchx_pre_submit``, ``torchx_post_submit``) are called:

- An implementation may declare any subset of the spec's arguments, by name
  (``def torchx_pre_submit(app)`` is fine); it receives only those.
- Implementations run one after another in the order of their distributions' names;
  ``@hookimpl(tryfirst=True)`` / ``(trylast=True)`` moves one to the front / the back.
- Wrappers (``hookwrapper=True`` / ``wrapper=True``) are not supported for event hooks:
  discovery records a plugin error (shown by ``torchx plugins``) and never calls them.
- What a return value and a raise mean is given per hook below.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

from torchx.plugins.registrations import (
    CliCommand,
    ComponentSource,
    LegacyModule,
    NamedResourcePlugin,
    SchedulerPlugin,
    TrackerPlugin,
    WorkspacePlugin,
)

if TYPE_CHECKING:
    from torchx.specs import AppDef

hookspec = pluggy.HookspecMarker("torchx")


@hookspec
def torchx_schedulers() -> Iterable[SchedulerPlugin]:
    """Schedulers this plugin provides.

    Example::

        @hookimpl
        def torchx_schedulers():
            yield SchedulerPlugin("slurm", "torchx_sched_slurm.scheduler:create_scheduler", "Slurm via sbatch")
    """


@hookspec
def torchx_named_resources() -> Iterable[NamedResourcePlugin]:
    """Named resources this plugin provides.

    Example::

        @hookimpl
        def torchx_named_resources():
            yield NamedResourcePlugin("gpu_x2", "my_pkg.resources:gpu_x2")
    """


@hookspec
def torchx_components() -> Iterable[ComponentSource]:
    """Packages of component functions this plugin provides.

    Example::

        @hookimpl
        def torchx_components():
            yield ComponentSource(prefix="", module="torchx_components")   # utils.echo, dist.ddp ...
    """


@hookspec
def torchx_trackers() -> Iterable[TrackerPlugin]:
    """Experiment-tracker backends this plugin provides.

    Example::

        @hookimpl
        def torchx_trackers():
            yield TrackerPlugin("fsspec", "torchx_tracker.fsspec_backend:create")
    """


@hookspec
def torchx_workspaces() -> Iterable[WorkspacePlugin]:
    """Workspace builders this plugin provides.

    Example::

        @hookimpl
        def torchx_workspaces():
            yield WorkspacePlugin("docker", "my_pkg.workspace:DockerWorkspaceMixin", "patch a docker image")
    """


@hookspec
def torchx_cli_commands() -> Iterable[CliCommand]:
    """``torchx`` sub-commands this plugin provides.

    Example::

        @hookimpl
        def torchx_cli_commands():
            yield CliCommand("tracker", "my_pkg.cli:CmdTracker", "query experiment trackers")
    """


@hookspec
def torchx_legacy_modules() -> Iterable[LegacyModule]:
    """Upstream TorchX module paths this plugin provides, so code written for TorchX imports unchanged.

    ``name`` is the upstream path, ``target`` the plugin's module that holds upstream's public
    names (usually a small module of re-exports). Core resolves ``import name`` to ``target``
    lazily, with an import hook: nothing is imported until the user imports ``name``. When no
    installed plugin provides a path core knows (see ``torchx.compat.legacy_import``), the
    import fails with the distribution to install.

    Example::

        @hookimpl
        def torchx_legacy_modules():
            yield LegacyModule("torchx.schedulers.slurm_scheduler", "torchx_sched_slurm.compat_slurm")
    """


@hookspec
def torchx_pre_submit(app: AppDef, scheduler: str, cfg: Mapping[str, Any]) -> AppDef | None:
    """Called before an app is submitted (and before a dry run). Enforce policy here.

    Return a new AppDef to amend the app: the next hook sees the amended one, and the
    last one's result is what is submitted (never mutate ``app`` itself: the caller's
    AppDef must stay as it was). Return None to leave it. Raise
    :class:`torchx.plugins.SubmissionRejected` with a message that says what to change
    to reject it: nothing is submitted, later hooks are not called, and the caller gets
    ``SubmissionRejected("rejected by plugin <name>: <message>")``. Any other exception
    propagates to the caller as it is.

    Example::

        @hookimpl
        def torchx_pre_submit(app, scheduler, cfg):
            if scheduler == "slurm" and "partition" not in cfg:
                raise SubmissionRejected("set -cfg partition=... (site policy)")
    """


@hookspec
def torchx_post_submit(app_handle: str, app: AppDef, scheduler: str, cfg: Mapping[str, Any]) -> None:
    """Called after an app was submitted, with its handle; the return value is ignored.

    Every hook is called, even when an earlier one raised: an exception is logged as a
    warning naming the plugin and never reaches the caller (the app is already running).

    Example::

        @hookimpl
        def torchx_post_submit(app_handle, app, scheduler, cfg):
            audit_log.write(f"{app_handle} {app.name}\\n")
    """
