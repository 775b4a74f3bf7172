"""The :class:`Workspace` a role carries: project directories to ship with the job, mapped to
paths in it."""

from __future__ import annotations

from torchx.util.record import record

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def _is_scheme(word: str) -> bool:
    return word[:1].isascii() and word[:1].isalpha() and all(c in _SCHEME_CHARS for c in word)


def is_url(src: str) -> bool:
    """True when the project ``src`` is a URL (``memory://``, ``s3://``, also chained as fsspec
    writes them, ``simplecache::s3://``) rather than a local path. (No ``re``: this module is on
    every ``torchx`` command's import path.)"""
    head, sep, _ = src.partition("://")
    return bool(sep) and all(_is_scheme(word) for word in head.split("::"))


@record
class Workspace:
    """Projects to ship into the job, mapped to paths inside it.

    ``projects`` maps a project (a local directory or file, or an fsspec URL of one) to a
    destination relative to the job's working directory (``""`` = its root).

    Args:
        projects: project -> destination path
    """

    projects: dict[str, str]

    @staticmethod
    def from_str(workspace: str | None) -> Workspace | None:
        """Parses ``"path"`` (one project at the root) or ``"src:dst;src2:dst2"``.

        A project may be an fsspec URL, as TorchX's workspaces are: ``"file:///src/proj"`` is
        the local ``/src/proj``; another scheme (``memory://proj``, ``s3://bucket/proj``) is
        kept as the URL and copied from there when shipped (that needs ``fsspec``). In a URL,
        the first ``:`` after ``scheme://`` starts the destination.
        """
        if not workspace:
            return None
        projects: dict[str, str] = {}
        for item in workspace.split(";"):
            item = item.strip()
            if not item:
                continue
            scheme = ""
            if is_url(item):
                scheme, _, item = item.partition("://")
                scheme = "" if scheme == "file" else f"{scheme}://"
            src, _, dst = item.partition(":")
            projects[scheme + src.strip()] = dst.strip()
        return Workspace(projects)

    def is_unmapped_single_project(self) -> bool:
        """True when there is one project mapped to the root."""
        return len(self.projects) == 1 and next(iter(self.projects.values())) == ""

    def __str__(self) -> str:
        if self.is_unmapped_single_project():
            return next(iter(self.projects))
        return ";".join(f"{k}:{v}" for k, v in self.projects.items())
