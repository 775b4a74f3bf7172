"""Workspaces: ship local code with a job (patch an image, copy to a job dir ...).

The interface is :class:`WorkspaceMixin`; implementations come from plugins
(``torchx_workspaces``) and are mixed into schedulers.
"""

from torchx.specs.workspace import Workspace
from torchx.workspace.api import WorkspaceMixin, get_workspace_mixin, walk_workspace

__all__ = ["Workspace", "WorkspaceMixin", "get_workspace_mixin", "walk_workspace"]
