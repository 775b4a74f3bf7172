"""File access for the apps: plain paths through the standard library, URLs through fsspec."""

from __future__ import annotations

import os
import re
from typing import IO, Any

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class MissingFsspecError(RuntimeError):
    """fsspec is needed (for a URL) but not installed."""


def is_url(path: str) -> bool:
    """True for ``scheme://...`` (``file://`` included), False for a plain path."""
    return bool(_URL.match(path))


def fsspec() -> Any:
    """The fsspec module.

    Raises:
        MissingFsspecError: it is not installed (the message says how to install it)
    """
    try:
        import fsspec as module
    except ImportError:
        raise MissingFsspecError(
            "fsspec is not installed in the job's environment: install torchx-components[copy]"
            " (and the fsspec backend of your URLs, e.g. s3fs) in the image"
        ) from None
    return module


def open_file(path: str, mode: str) -> IO[Any]:
    """Opens a path or URL; writing creates the parent directories."""
    if is_url(path):
        fs, inner = fsspec().core.url_to_fs(path)
        if "w" in mode:
            parent = inner.rpartition("/")[0]
            if parent:
                fs.makedirs(parent, exist_ok=True)
        return fs.open(inner, mode)  # type: ignore[no-any-return]
    if "w" in mode:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return open(path, mode)


def exists(path: str) -> bool:
    """Whether a path or URL exists."""
    if is_url(path):
        fs, inner = fsspec().core.url_to_fs(path)
        return bool(fs.exists(inner))
    return os.path.exists(path)
