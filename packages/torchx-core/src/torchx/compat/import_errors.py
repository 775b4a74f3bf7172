"""What a failed plugin import tells: a one-line description of the error, and the files a
fix would touch (so the plugin cache notices the fix)."""

from __future__ import annotations


def describe_error(e: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def import_failure_files(module: str, error: BaseException) -> list[str]:
    """Files (and their folders) a failed import of ``module`` went through: editing one of
    them, or adding a file next to them, may fix it."""
    import os
    import sys
    import traceback

    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    if isinstance(error, SyntaxError) and error.filename:
        files.append(error.filename)
    package = sys.modules.get(module.rpartition(".")[0])
    folders = list(getattr(package, "__path__", []) or [])
    stdlib = os.path.dirname(os.__file__)
    here = os.path.dirname(__file__)  # the frames of the compat sources that import plugin modules
    found = [f for f in files if os.path.isabs(f) and os.path.dirname(f) != here and not f.startswith(stdlib)]
    return sorted({*found, *(os.path.dirname(f) for f in found), *folders})
