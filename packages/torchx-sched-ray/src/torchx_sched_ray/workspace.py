"""The Ray workspace: the workspace is copied into a staging directory that the job ships as its
``working_dir`` (Ray uploads it; every replica runs in its copy). No image is built."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping

from torchx.specs.roles import Role
from torchx.specs.runopts import CfgVal
from torchx.specs.workspace import Workspace
from torchx.workspace.api import WorkspaceMixin, copy_workspace

logger: logging.Logger = logging.getLogger(__name__)

#: name prefix of the staging directories
STAGING_PREFIX = "torchx-ray-ws-"


class RayWorkspaceMixin(WorkspaceMixin[None]):
    """Ships a role's workspace (``.torchxignore`` honoured) as the job's working directory.

    The role's image becomes the staging directory; the scheduler ships it and removes it
    once submitted (or on :meth:`close`). An explicit ``working_dir`` run option wins: then
    the workspace is not copied.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.staged: list[str] = []

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Copies ``workspace`` into a new staging directory and points the role's image at it."""
        if cfg.get("working_dir"):
            logger.debug("working_dir is set: workspace %s is not shipped", workspace)
            return
        ws = Workspace.from_str(workspace)
        if ws is None:
            return
        staging = tempfile.mkdtemp(prefix=STAGING_PREFIX)
        self.staged.append(staging)
        copy_workspace(ws, staging)
        role.image = staging

    def remove_staged(self) -> None:
        """Removes the staging directories made so far."""
        for path in self.staged:
            shutil.rmtree(path, ignore_errors=True)
        self.staged.clear()
