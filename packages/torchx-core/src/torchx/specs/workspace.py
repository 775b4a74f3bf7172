"""The :class:`Workspace` a role carries: local project directories to ship with the job."""

from __future__ import annotations

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

    def __str__(self) -> str:
        if self.is_unmapped_single_project():
            return next(iter(self.projects))
        return ";".join(f"{k}:{v}" for k, v in self.projects.items())
