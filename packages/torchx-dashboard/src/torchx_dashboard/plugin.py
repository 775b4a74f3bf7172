"""Registers the ``torchx dashboard`` command (imports nothing heavy: the web stack loads when it runs)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import CliCommand, hookimpl


@hookimpl
def torchx_cli_commands() -> Iterator[CliCommand]:
    """``torchx dashboard``."""
    yield CliCommand(
        "dashboard",
        "torchx_dashboard.cli:CmdDashboard",
        "serve a web page of every job on every installed scheduler (live logs, cancel, sweeps)",
    )
