"""Registers the ``torchx sweep`` command (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import CliCommand, hookimpl


@hookimpl
def torchx_cli_commands() -> Iterator[CliCommand]:
    """``torchx sweep``."""
    yield CliCommand(
        "sweep", "torchx_sweep.cli:CmdSweep", "run a component over a grid, random samples or a file of arguments"
    )
