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

from torchx.plugins.registrations import KINDS
from torchx.plugins.registry import PluginInfo, Registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: upstream's entry-point group -> the kind of registration its entries are
LEGACY_KINDS: dict[str, str] = {
    "torchx.schedulers": "schedulers",
    "torchx.named_resources": "named_resources",
    "torchx.components": "components",
    "torchx.tracker": "trackers",
    "torchx.cli.cmds": "cli_commands",
}

LEGACY_GROUPS: tuple[str, ...] = tuple(LEGACY_KINDS)


def legacy_record(group: str, name: str, value: str) -> Any:
    """The record a legacy entry point ``name = value`` in ``group`` stands for."""
    kind = LEGACY_KINDS.get(group)
    if kind is None:
        raise ValueError(f"not a legacy torchx entry-point group: {group}")
    if kind == "components":
        name = "" if name.startswith("_") else name
    return KINDS[kind].make(name, value)


def add_legacy(registry: Registry, eps: list[tuple[Any, str, str, list[str]]]) -> None:
    """Adds every legacy-group entry point (one :class:`PluginInfo` each); nothing is imported."""
    for ep, dist, version, _ in eps:
        if ep.group in LEGACY_KINDS:
            info = PluginInfo(name=ep.name, dist=dist, version=version, group=ep.group, value=ep.value)
            registry.plugins.append(info)
            registry.add(info, legacy_record(ep.group, ep.name, ep.value))
