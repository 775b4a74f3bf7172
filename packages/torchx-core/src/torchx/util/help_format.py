"""An argparse help formatter that learns the terminal width without importing ``shutil``.

argparse's own formatter imports ``shutil`` (and with it bz2, lzma, zlib, fnmatch) every time
a parser adds an argument, just to ask for the terminal width; this one asks ``os`` directly,
so building a parser stays cheap and only printing help costs anything.
"""

from __future__ import annotations

import argparse
import os
import sys


def terminal_columns() -> int:
    """``$COLUMNS``, else the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns or 80


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``RawDescriptionHelpFormatter`` sized like argparse's, minus the ``shutil`` import."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, width or terminal_columns() - 2)
