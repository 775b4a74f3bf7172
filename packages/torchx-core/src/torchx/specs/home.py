"""``TORCHX_HOME``: torchx's own directory for files it keeps for the user."""

from __future__ import annotations

import os
import pathlib


def TORCHX_HOME(*subdirs: str) -> pathlib.Path:
    """``$TORCHX_HOME`` (default ``~/.torchx``), joined with ``subdirs``; the directory is created.

    Example: ``TORCHX_HOME("conda-pack-out")`` is ``~/.torchx/conda-pack-out``.
    """
    path = pathlib.Path(os.environ.get("TORCHX_HOME") or pathlib.Path.home() / ".torchx").joinpath(*subdirs)
    path.mkdir(parents=True, exist_ok=True)
    return path
