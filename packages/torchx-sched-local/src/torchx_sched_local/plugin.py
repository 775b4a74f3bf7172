"""Registers ``local_cwd``, ``local_docker`` and the ``docker`` workspace (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import LegacyModule, SchedulerPlugin, WorkspacePlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """``local_cwd`` (OS processes) and ``local_docker`` (containers on the local engine)."""
    yield SchedulerPlugin(
        "local_cwd",
        "torchx_sched_local.local_scheduler:create_scheduler",
        "processes on this machine, started from the current directory; jobs outlive the CLI",
    )
    yield SchedulerPlugin(
        "local_docker",
        "torchx_sched_local.docker_scheduler:create_scheduler",
        "containers on the local Docker engine (needs torchx-sched-local[docker])",
    )


@hookimpl
def torchx_workspaces() -> Iterator[WorkspacePlugin]:
    """The ``docker`` workspace: patches ``role.image`` with the workspace's files."""
    yield WorkspacePlugin(
        "docker",
        "torchx_sched_local.docker_workspace:DockerWorkspaceMixin",
        "builds an image FROM role.image with the workspace copied in (needs torchx-sched-local[docker])",
    )


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module paths of the local schedulers and the docker workspace."""
    yield LegacyModule("torchx.schedulers.local_scheduler", "torchx_sched_local.compat_local")
    yield LegacyModule("torchx.schedulers.docker_scheduler", "torchx_sched_local.compat_docker")
    yield LegacyModule("torchx.workspace.docker_workspace", "torchx_sched_local.docker_workspace")
