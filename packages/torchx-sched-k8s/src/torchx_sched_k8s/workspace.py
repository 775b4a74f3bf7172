"""The image workspace of the Kubernetes schedulers: the ``docker`` workspace plugin, or a clear error.

The ``docker`` workspace (from ``torchx-sched-local[docker]``) builds a role's workspace
into a new image on the local Docker engine; the scheduler then pushes it to
``image_repo`` so the cluster can pull it. Without that plugin, asking for a workspace
fails with one line saying what to install (or how to run without a workspace).
"""

from __future__ import annotations

from typing import Any

from torchx.workspace.api import UnavailableWorkspace as NoDockerWorkspace
from torchx.workspace.api import WorkspaceMixin, WorkspaceUnavailableError, workspace_mixin_or_placeholder

__all__ = ["NoDockerWorkspace", "WorkspaceUnavailableError", "docker_workspace"]


def docker_workspace() -> type[WorkspaceMixin[Any]]:
    """The installed ``docker`` workspace mixin, else a stand-in that explains how to get it."""
    return workspace_mixin_or_placeholder("docker", "torchx-sched-k8s[docker]")
