"""The files a workspace ships: its projects walked once, for every scheduler, minus what
``.torchxignore`` leaves out by Docker's ``.dockerignore`` rules:

- One pattern a line; blank lines and lines starting with ``#`` are skipped; surrounding
  white space is trimmed; a leading or trailing ``/`` is dropped (patterns are relative to
  the workspace root, whatever their slashes).
- ``*`` matches any run of characters except ``/``, ``?`` one character except ``/``,
  ``[...]`` a class, ``\\`` escapes; ``**`` matches any number of directories (including none).
- A pattern that matches a directory excludes everything below it. ``*.pyc`` matches only
  at the top level: ``**/*.pyc`` matches at any depth.
- ``!pattern`` re-includes what it matches; the last matching line wins.

The Docker engine's own behaviour is the reference: the live test builds a context with
the same file as ``.dockerignore`` and compares.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.workspace import Workspace

#: name of the ignore file in a workspace
IGNORE_FILE = ".torchxignore"
#: a project shipping more files or bytes than this gets one warning (it may be a home directory)
LARGE_FILES = 20_000
LARGE_BYTES = 2 << 30


def _translate(pattern: str) -> str:
    """The regular expression (without anchors) of one dockerignore pattern."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if pattern.startswith("/", i):  # "**/": any number of directories, including none
                    i += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern.startswith("[!", i) or pattern.startswith("[^", i) else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _clean(pattern: str) -> str:
    """``filepath.Clean`` as Docker applies it, and the leading/trailing slashes dropped."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if part in ("", "."):
            continue
        if part == ".." and parts and parts[-1] != "..":
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts)


class IgnoreRules:
    """The compiled patterns of one ignore file.

    Args:
        lines: the file's lines
    """

    def __init__(self, lines: list[str]) -> None:
        self.rules: list[tuple[re.Pattern[str], bool]] = []
        for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            pattern = _clean(line[1:].strip() if negate else line)
            if pattern:
                self.rules.append((re.compile(_translate(pattern) + r"\Z", re.DOTALL), negate))
        self.has_exceptions = any(negate for _, negate in self.rules)

    @staticmethod
    def load(root: str, name: str = IGNORE_FILE) -> IgnoreRules:
        """The rules of ``root``'s ignore file ``name`` (none when it has none)."""
        try:
            with open(os.path.join(root, name)) as f:
                return IgnoreRules(f.read().splitlines())
        except OSError:
            return IgnoreRules([])

    def ignored(self, rel: str) -> bool:
        """True when the file or directory ``rel`` (``/``-separated, relative to the root) is left out."""
        parents = rel.split("/")
        prefixes = ["/".join(parents[: i + 1]) for i in range(len(parents))]
        result = False
        for regex, negate in self.rules:
            if any(regex.match(p) for p in prefixes):
                result = not negate
        return result

    def prunable(self, rel_dir: str) -> bool:
        """True when nothing below directory ``rel_dir`` can be kept (so it need not be walked)."""
        return not self.has_exceptions and self.ignored(rel_dir)


def walk_workspace(path: str, ignore_name: str = IGNORE_FILE, also_ignore: Sequence[str] = ()) -> Iterator[str]:
    """Relative paths (``/``-separated, sorted per directory) of the files under ``path`` that its
    ``.torchxignore`` keeps, and each ignore file named in ``also_ignore`` (``.dockerignore``
    for a Docker image): a file any of them leaves out is left out. Raises
    ``FileNotFoundError`` when ``path`` is not a directory."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"workspace {path!r} is not a directory")
    rules = [IgnoreRules.load(path) if ignore_name == IGNORE_FILE else IgnoreRules([])]
    rules += [IgnoreRules.load(path, name) for name in also_ignore]
    for dirpath, dirnames, filenames in os.walk(path):
        rel_dir = os.path.relpath(dirpath, path)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        prefix = rel_dir + "/" if rel_dir else ""
        dirnames[:] = sorted(d for d in dirnames if not any(r.prunable(prefix + d) for r in rules))
        for name in sorted(filenames):
            rel = prefix + name
            if not any(r.ignored(rel) for r in rules):
                yield rel


def project_files(workspace: Workspace, also_ignore: Sequence[str] = ()) -> Iterator[tuple[str, str]]:
    """(path on disk, path in the shipped tree) of every file ``workspace`` ships: each project
    directory walked with its ``.torchxignore``, a project file as itself; a project at the root
    (``dst`` empty) keeps its relative paths, a file there keeps its name. A project given as an
    fsspec URL (``memory://``, ``s3://``) is first copied into a temporary directory, which lives
    until the iteration ends (:func:`torchx.workspace.remote.fetched`). The ignore files named in
    ``also_ignore`` leave files out too (:func:`walk_workspace`).

    Raises:
        FileNotFoundError: a project does not exist (nothing is shipped silently empty)
        ModuleNotFoundError: a project is an fsspec URL and ``fsspec`` is not installed
        ValueError: a project holds a named pipe, socket or device (no scheduler can ship one:
            copying a FIFO would block), named with the way to leave it out
    """
    from torchx.specs.workspace import is_url

    for src, dst in workspace.projects.items():
        if is_url(src):
            from torchx.workspace.remote import fetched

            with fetched(src, IGNORE_FILE, lambda lines: IgnoreRules(lines).ignored) as local:
                yield from _local_project_files(local, dst, also_ignore)
        else:
            yield from _local_project_files(os.path.expanduser(src), dst, also_ignore)


def _local_project_files(src: str, dst: str, also_ignore: Sequence[str]) -> Iterator[tuple[str, str]]:
    """:func:`project_files` of one local project ``src`` shipped to ``dst``."""
    import stat

    if os.path.isdir(src):
        files = size = 0
        warned = False
        for rel in walk_workspace(src, also_ignore=also_ignore):
            path = os.path.join(src, rel)
            st = os.lstat(path)
            mode = st.st_mode
            files, size = files + 1, size + st.st_size
            if not warned and (files >= LARGE_FILES or size >= LARGE_BYTES):
                warned = True
                _warn_large(src, files, size)
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                raise ValueError(
                    f"workspace {src!r} holds {path!r}, which is not a regular file (a named pipe,"
                    f" socket or device); add {rel!r} to {os.path.join(src, IGNORE_FILE)!r}, or run"
                    " from your project's directory (the workspace is the current directory by default)"
                )
            yield path, os.path.normpath(os.path.join(dst, rel))
    elif os.path.exists(src):
        yield src, os.path.normpath(dst or os.path.basename(src))
    else:
        raise FileNotFoundError(f"workspace project {src!r} does not exist; pass an existing directory or file")


def _warn_large(src: str, files: int, size: int) -> None:
    import logging

    logging.getLogger(__name__).warning(
        "the workspace %r is large (%d files, %.1f GB so far) and is shipped with the job;"
        " list what the job does not need in %r, or pass --workspace (it is the current directory"
        " by default)",
        src,
        files,
        size / 1e9,
        os.path.join(src, IGNORE_FILE),
    )


def copy_workspace(workspace: Workspace, target_dir: str) -> None:
    """Copies every file ``workspace`` ships (:func:`project_files`) into ``target_dir``;
    existing files are overwritten.

    Raises:
        FileNotFoundError: a project does not exist
    """
    import shutil

    for path, rel in project_files(workspace):
        out = os.path.join(target_dir, rel)
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        shutil.copy2(path, out, follow_symlinks=False)
