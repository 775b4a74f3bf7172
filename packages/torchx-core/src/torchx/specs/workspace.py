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
        """Parses ``"path"`` (one project at the root) or ``"src:dst;src2:dst2"``.

        A path may be a ``file://`` URL (TorchX's workspaces are fsspec URLs; its CLI's default
        was ``file://<cwd>``): ``"file:///src/proj"`` is ``/src/proj``.

        Raises:
            ValueError: a project is a URL of another scheme (``s3://``, ``memory://``): only
                local directories can be shipped
        """
        if not workspace:
            return None
        projects: dict[str, str] = {}
        for item in workspace.split(";"):
            item = item.strip()
            if not item:
                continue
            scheme, sep, rest = item.partition("://")
            if sep and scheme == "file":
                item = rest
            elif sep and scheme.isidentifier():
                raise ValueError(
                    f"workspace {item!r} is a {scheme}:// URL; a workspace is a local directory"
                    " (a path or a file:// URL): copy the project here first"
                )
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
