"""The docker-image workspace of ``aws_batch``: the installed ``docker`` workspace plugin, or a
stand-in that explains how to get it."""

from __future__ import annotations

from typing import Any

from torchx.workspace.api import WorkspaceMixin, workspace_mixin_or_placeholder


def docker_workspace_mixin() -> type[WorkspaceMixin[Any]]:
    """The class of the installed ``docker`` workspace, else a stand-in raising a clear error."""
    return workspace_mixin_or_placeholder("docker", "torchx-sched-local[docker]")
