"""The ``job_dir`` workspace of batch schedulers (Slurm, LSF, ...): the workspace is copied
into the job's directory on a shared filesystem and the job runs from there."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.roles import Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.workspace import Workspace
from torchx.util.record import record
from torchx.workspace.api import WorkspaceMixin, copy_workspace

logger: logging.Logger = logging.getLogger(__name__)


@record
class JobDirOpts(StructuredOpts):
    """The option of the job-dir workspace."""

    job_dir: str | None = None
    """Directory the job runs in and writes its logs to (created if missing); a workspace is copied into it. Default: the current directory."""


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

    def describe_workspace_build(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """Where the workspace would be copied (``role.image`` becomes that ``job_dir``)."""
        job_dir: Any = cfg.get("job_dir")
        if not job_dir:
            return f"role {role.name!r}: workspace {role.workspace} is used in place (no job_dir)"
        role.image = os.path.abspath(str(job_dir))
        return f"role {role.name!r}: copy workspace {role.workspace} into job_dir {role.image}"
