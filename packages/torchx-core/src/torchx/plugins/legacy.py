"""Reads the entry-point groups documented for upstream TorchX into registration records.

=========================  ==================================  ==========================
group                      entry point                          record
=========================  ==================================  ==========================
``torchx.schedulers``      ``name = mod:create_scheduler``      SchedulerPlugin
``torchx.named_resources`` ``name = mod:fn``                    NamedResourcePlugin
``torchx.components``      ``alias = some.package``             ComponentSource
``torchx.tracker``         ``name = mod:create``                TrackerPlugin
``torchx.cli.cmds``        ``name = mod:SubCommandClass``       CliCommand
=========================  ==================================  ==========================

Legacy registrations add to the installed plugins (they never hide the builtins). A
components alias starting with ``_`` (``_``, ``_0``, ``_1`` ...) means "no prefix".
Nothing is imported here.
"""

from __future__ import annotations

from typing import Any

from torchx.plugins.records import (
    CliCommand,
    ComponentSource,
    NamedResourcePlugin,
    SchedulerPlugin,
    TrackerPlugin,
)

LEGACY_GROUPS: tuple[str, ...] = (
    "torchx.schedulers",
    "torchx.named_resources",
    "torchx.components",
    "torchx.tracker",
    "torchx.cli.cmds",
)


def legacy_record(group: str, name: str, value: str) -> Any:
    """The record a legacy entry point ``name = value`` in ``group`` stands for."""
    if group == "torchx.schedulers":
        return SchedulerPlugin(name, value, "")
    if group == "torchx.named_resources":
        return NamedResourcePlugin(name, value)
    if group == "torchx.components":
        return ComponentSource("" if name.startswith("_") else name, value)
    if group == "torchx.tracker":
        return TrackerPlugin(name, value)
    if group == "torchx.cli.cmds":
        return CliCommand(name, value, "")
    raise ValueError(f"not a legacy torchx entry-point group: {group}")
