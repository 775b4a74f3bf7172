"""Copies a file or a directory tree between fsspec URLs (the program behind ``utils.copy``).

Usage: ``python -m torchx_components.apps.copy --src URL --dst URL``. A file copied onto an
existing directory (or a ``dst`` ending in ``/``) lands inside it; a directory is copied
into ``dst`` recursively. Needs fsspec (``torchx-components[copy]``).
"""

from __future__ import annotations

import argparse
import posixpath
import shutil
import sys
from typing import Any

from torchx_components.apps._fs import MissingFsspecError, fsspec

_CHUNK = 1 << 20


def _copy_file(src_fs: Any, src: str, dst_fs: Any, dst: str) -> None:
    parent = posixpath.dirname(dst)
    if parent:
        dst_fs.makedirs(parent, exist_ok=True)
    with src_fs.open(src, "rb") as fin, dst_fs.open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, _CHUNK)


def copy(src: str, dst: str) -> int:
    """Copies ``src`` to ``dst``; returns the number of files copied.

    Raises:
        FileNotFoundError: ``src`` does not exist
        MissingFsspecError: fsspec is not installed
    """
    core = fsspec().core
    src_fs, src_path = core.url_to_fs(src)
    dst_fs, dst_path = core.url_to_fs(dst)
    src_path = src_path.rstrip("/") or src_path
    if src_fs.isdir(src_path):
        dst_fs.makedirs(dst_path, exist_ok=True)
        files = [f for f in src_fs.find(src_path) if not src_fs.isdir(f)]
        for f in files:
            _copy_file(src_fs, f, dst_fs, posixpath.join(dst_path, posixpath.relpath(f, src_path)))
        return len(files)
    if not src_fs.exists(src_path):
        raise FileNotFoundError(f"{src} does not exist")
    if dst.endswith("/") or dst_fs.isdir(dst_path):
        dst_path = posixpath.join(dst_path, posixpath.basename(src_path))
    _copy_file(src_fs, src_path, dst_fs, dst_path)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="torchx_components.apps.copy", description=__doc__.splitlines()[0])
    parser.add_argument("--src", required=True, help="source URL or path")
    parser.add_argument("--dst", required=True, help="destination URL or path")
    args = parser.parse_args(argv)
    try:
        count = copy(args.src, args.dst)
    except (OSError, MissingFsspecError, ValueError) as e:
        print(f"copy: error: {e}", file=sys.stderr)
        return 1
    print(f"copied {count} file(s) from {args.src} to {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
