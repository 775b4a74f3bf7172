"""Workspace projects given as fsspec URLs (``memory://``, ``s3://``, ...): copied to a local
temporary directory first, then shipped as a local project. ``fsspec`` is imported only here,
when such a project is shipped: core does not depend on it."""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: the ignore rules of a project, from its ignore file's lines: whether a relative path is left out
IgnoreRulesOf = Callable[[list[str]], Callable[[str], bool]]


@contextmanager
def fetched(url: str, ignore_file: str, rules_of: IgnoreRulesOf) -> Iterator[str]:
    """Copies the project at ``url`` (a directory or one file) into a temporary directory and
    yields the local copy's path (named as the project: a file keeps its name); the copy is
    removed afterwards. Files that the project's ``ignore_file`` leaves out (by ``rules_of``
    its lines) are not copied.

    Raises:
        ModuleNotFoundError: ``fsspec`` is not installed (the message says to install it)
        FileNotFoundError: nothing is at ``url``
    """
    try:
        import fsspec
    except ImportError:
        raise ModuleNotFoundError(
            f"workspace {url!r} is an fsspec URL and fsspec is not installed: pip install fsspec"
            " (and the package of its scheme), or pass a local directory"
        ) from None
    fs, path = fsspec.core.url_to_fs(url)
    path = path.rstrip("/") or "/"
    if not fs.exists(path):
        raise FileNotFoundError(f"workspace project {url!r} does not exist; pass an existing directory or file")
    name = posixpath.basename(path) or "workspace"
    with tempfile.TemporaryDirectory(prefix="torchx-workspace-") as tmp:
        local = os.path.join(tmp, name)
        if not fs.isdir(path):
            fs.get_file(path, local)
            yield local
            return
        ignore = posixpath.join(path, ignore_file)
        ignored = rules_of(fs.cat_file(ignore).decode().splitlines() if fs.isfile(ignore) else [])
        for remote, info in fs.find(path, detail=True).items():
            rel = posixpath.relpath(remote, path)
            if info.get("type") == "directory" or ignored(rel):
                continue
            out = os.path.join(local, *rel.split("/"))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            fs.get_file(remote, out)
            if isinstance(info.get("mode"), int):  # file systems that keep unix modes (not memory://)
                os.chmod(out, info["mode"] & 0o7777)
        os.makedirs(local, exist_ok=True)  # an empty project is an empty directory
        yield local
