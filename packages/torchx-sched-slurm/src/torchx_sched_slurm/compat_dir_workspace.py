"""``torchx.workspace.dir_workspace``: upstream TorchX's module path of the directory workspace
(copy the workspace into ``job_dir``; what ``slurm`` uses).

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.workspace.job_dir import JobDirWorkspaceMixin as DirWorkspaceMixin

__all__ = ["DirWorkspaceMixin"]
