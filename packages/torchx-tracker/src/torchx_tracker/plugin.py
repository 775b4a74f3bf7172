"""Registers the tracker backends and the ``torchx tracker`` command (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import CliCommand, TrackerPlugin, hookimpl


@hookimpl
def torchx_trackers() -> Iterator[TrackerPlugin]:
    """The ``fsspec`` tracker backend, and ``mlflow`` (needs ``torchx-tracker[mlflow]``)."""
    yield TrackerPlugin("fsspec", "torchx_tracker.fsspec_backend:create")
    yield TrackerPlugin("mlflow", "torchx_tracker.mlflow_backend:create")


@hookimpl
def torchx_cli_commands() -> Iterator[CliCommand]:
    """``torchx tracker``."""
    yield CliCommand(
        "tracker", "torchx_tracker.cli:CmdTracker", "list the runs, metadata, artifacts and lineage a tracker recorded"
    )
