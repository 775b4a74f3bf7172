"""The :class:`Workspace` a role carries: local project directories to ship with the job."""

from __future__ import annotations

import os

from torchx.util.record import record


@record
class Workspace:
    """Local directories to ship into the job's image, mapped to paths inside it.

    ``projects`` maps a local directory to a destination relative to the image's
    working directory (``""`` = its root).

    Args:
        projects: local path -> destination path
    """

    projects: dict[str, str]

    @staticmethod
    def from_str(workspace: str | None) -> Workspace | None:
        """Parses ``"path"`` (one project at the root) or ``"src:dst;src2:dst2"``."""
        if not workspace:
            return None
        if ";" not in workspace and ":" not in workspace:
            return Workspace({workspace: ""})
        projects: dict[str, str] = {}
        for item in workspace.split(";"):
            if not item.strip():
                continue
            src, _, dst = item.partition(":")
            projects[src.strip()] = dst.strip()
        return Workspace(projects)

    def is_unmapped_single_project(self) -> bool:
        """True when there is one project mapped to the root."""
        return len(self.projects) == 1 and next(iter(self.projects.values())) == ""

    def merge_into(self, outdir: str) -> None:
        """Copies every project into ``outdir`` at its destination."""
        import shutil

        for src, dst in self.projects.items():
            target = os.path.join(outdir, dst)
            if os.path.isdir(src):
                shutil.copytree(src, target, dirs_exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                shutil.copy2(src, target)

    def __str__(self) -> str:
        if self.is_unmapped_single_project():
            return next(iter(self.projects))
        return ";".join(f"{k}:{v}" for k, v in self.projects.items())
