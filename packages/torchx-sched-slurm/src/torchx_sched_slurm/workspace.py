"""The ``job_dir`` workspace: copy the workspace into the job's directory and run from there."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from typing import Any

from torchx.specs.roles import Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.workspace import Workspace
from torchx.workspace.api import WorkspaceMixin, walk_workspace

from torchx_sched_slurm.opts import JobDirOpts

logger: logging.Logger = logging.getLogger(__name__)


def copy_workspace(workspace: Workspace, job_dir: str) -> None:
    """Copies every project of ``workspace`` into ``job_dir`` at its destination.

    Directories honour their ``.torchxignore``; existing files are overwritten.

    Raises:
        FileNotFoundError: a project path does not exist
    """
    for src, dst in workspace.projects.items():
        target = os.path.join(job_dir, dst)
        if os.path.isdir(src):
            for rel in walk_workspace(src):
                out = os.path.join(target, rel)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                shutil.copy2(os.path.join(src, rel), out, follow_symlinks=False)
        elif os.path.exists(src):
            dest = target if dst else os.path.join(job_dir, os.path.basename(src))
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            shutil.copy2(src, dest)
        else:
            raise FileNotFoundError(f"workspace path {src!r} does not exist; pass an existing directory or file")


class JobDirWorkspaceMixin(WorkspaceMixin[None]):
    """Ships a role's workspace by copying it into the ``job_dir`` run option.

    The role's image becomes ``job_dir`` (the ``img_root`` macro). Without ``job_dir`` the
    job runs in the directory torchx is started from, where the workspace usually is, and
    nothing is copied.
    """

    def workspace_opts(self) -> runopts:
        """The ``job_dir`` option."""
        return JobDirOpts.as_runopts()

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Copies ``workspace`` into ``cfg["job_dir"]`` (created if missing) and points the role at it."""
        job_dir: Any = cfg.get("job_dir")
        if not job_dir:
            logger.debug("no job_dir: workspace %s is used in place", workspace)
            return
        job_dir = os.path.abspath(str(job_dir))
        ws = Workspace.from_str(workspace)
        if ws is None:
            return
        os.makedirs(job_dir, exist_ok=True)
        copy_workspace(ws, job_dir)
        role.image = job_dir
