"""``torchx.workspace.dir_workspace``: upstream TorchX's module path of the directory workspace
(copy the workspace into ``job_dir``; what ``slurm`` uses).

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from collections.abc import Mapping

from torchx.specs.roles import Role
from torchx.specs.runopts import CfgVal
from torchx.specs.workspace import Workspace
from torchx.workspace.api import WorkspaceMixin
from torchx.workspace.files import copy_workspace
from torchx.workspace.job_dir import JobDirWorkspaceMixin as DirWorkspaceMixin


class TmpDirWorkspaceMixin(WorkspaceMixin[None]):
    """Copies the workspace into a new temporary directory (``torchx_workspace*``, left for the
    job to use) and makes it the role's image, as TorchX's mixin of this name; files matched by
    ``.torchxignore`` are not copied."""

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Copies ``workspace`` into a fresh temporary directory; ``role.image`` becomes it."""
        import tempfile

        parsed = Workspace.from_str(workspace)
        if parsed is None:  # no workspace: the image is used as it is
            return
        job_dir = tempfile.mkdtemp(prefix="torchx_workspace")
        copy_workspace(parsed, job_dir)
        role.image = job_dir


__all__ = ["DirWorkspaceMixin", "TmpDirWorkspaceMixin"]
