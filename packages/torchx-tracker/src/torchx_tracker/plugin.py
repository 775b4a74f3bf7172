"""Registers the tracker backends and the ``torchx tracker`` command (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import CliCommand, LegacyModule, TrackerPlugin, hookimpl


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


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module paths of the fsspec and MLflow backends, ``torchx tracker`` and the result tracker."""
    yield LegacyModule("torchx.tracker.backend.fsspec", "torchx_tracker.fsspec_backend")
    yield LegacyModule("torchx.cli.cmd_tracker", "torchx_tracker.cli")
    yield LegacyModule("torchx.runtime.tracking", "torchx_tracker.runtime_tracking")
    yield LegacyModule("torchx.tracker.mlflow", "torchx_tracker.compat_mlflow")
