"""Reads the entry-point groups documented for upstream TorchX into registrations.

=========================  ==================================  ==========================
group                      entry point                          record
=========================  ==================================  ==========================
``torchx.schedulers``      ``name = mod:create_scheduler``      SchedulerPlugin
``torchx.named_resources`` ``name = mod:fn``                    NamedResourcePlugin
``torchx.components``      ``alias = some.package``             ComponentSource
``torchx.tracker``         ``name = mod:create``                TrackerPlugin
``torchx.cli.cmds``        ``name = mod:SubCommandClass``       CliCommand
=========================  ==================================  ==========================

Legacy registrations are merged with what ``torchx``-group plugins register (a legacy entry
wins a name clash), with one exception that upstream documents for components:

**Components** (the rule, as in upstream's "Registering Custom Components"):

- ``torchx.components`` entries *replace* the builtin components (``utils.echo``,
  ``dist.ddp`` ... of ``torchx-components``): once any entry is installed, the builtins are
  listed only if an entry names their package. ``torchx = torchx.components`` (or any alias
  pointing at it, or at ``torchx_components``) adds them back as ``torchx.dist.ddp``;
- an alias starting with ``_`` (``_``, ``_0``, ``_1`` ...) means "no prefix":
  ``_1 = torchx.components`` restores ``dist.ddp``;
- each entry is its own source: ``foo = my_project.bar`` and ``test = my_project`` list
  ``foo.baz.trainer`` *and* ``test.bar.baz.trainer``;
- only regular packages (with ``__init__.py``) are searched below the registered module; a
  namespace package may be registered at the top but its namespace sub-packages are skipped.

Components registered through the ``torchx`` group (``torchx_components`` hook) are additive:
they hide nothing, and legacy entries hide none of them except the builtins. The README's
"Writing a plugin" section states the same rules. Nothing is imported here.
"""

from __future__ import annotations

from torchx.plugins.registrations import (
    CliCommand,
    ComponentSource,
    NamedResourcePlugin,
    SchedulerPlugin,
    TrackerPlugin,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
