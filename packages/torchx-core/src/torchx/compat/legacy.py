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

Components registered natively (``component.<prefix>`` entry points of the group ``torchx``) are additive:
they hide nothing, and legacy entries hide none of them except the builtins. The README's
"Writing a plugin" section states the same rules. Nothing is imported here.
"""

from __future__ import annotations

from torchx.plugins.registrations import KINDS, ComponentSource
from torchx.plugins.registry import Conflict, PluginInfo, Registry

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


def legacy_target(registry: Registry, module: str) -> str | None:
    """The module that provides the upstream module path ``module``, or None.

    A registered package path covers its submodules: with ``torchx.components`` ->
    ``torchx_components``, ``torchx.components.dist`` resolves to ``torchx_components.dist``.
    """
    name = module
    while "." in name:
        found = registry.legacy_modules.get(name)
        if found is not None:
            return found.target + module[len(name) :]
        name = name.rpartition(".")[0]
    return None


#: a ``torchx.components`` entry point and the plugin it is
ComponentEntry = tuple[PluginInfo, ComponentSource]


def add_legacy(registry: Registry, eps: list[tuple[Any, str, str, list[str]]]) -> list[ComponentEntry]:
    """Adds every legacy-group entry point (one :class:`PluginInfo` each; nothing is imported),
    but the ``torchx.components`` ones, returned for :func:`replace_components`."""
    components: list[ComponentEntry] = []
    for ep, dist, version, _ in eps:
        if ep.group in LEGACY_KINDS:
            info = PluginInfo(name=ep.name, dist=dist, version=version, group=ep.group, value=ep.value)
            registry.plugins.append(info)
            record = legacy_record(ep.group, ep.name, ep.value)
            if isinstance(record, ComponentSource):
                components.append((info, record))
            else:
                registry.add(info, record)
    return components


def replace_components(registry: Registry, entries: list[ComponentEntry]) -> None:
    """Once every source was read: ``torchx.components`` entries hide the builtin components
    unless an entry names their package, and each entry is a prefixed source of its own,
    searched before the plugins' sources (the rule above)."""
    if not entries:
        return
    table = registry.tables["components"]
    builtin = legacy_target(registry, "torchx.components")
    for key, source in list(table.items()):
        if builtin is not None and source.module == builtin:
            del table[key]
            owner = registry.origin.pop(("components", key), "?")
            by = entries[0][0].ident
            registry.conflicts.append(
                Conflict("components", builtin, by, owner, "torchx.components entry points", builtin)
            )
    plugin_sources = dict(table)
    table.clear()
    for plugin, entry in entries:
        resolved = ComponentSource(entry.prefix, legacy_target(registry, entry.module) or entry.module)
        key = f"{resolved.prefix}|{resolved.module}"  # how the registry keys a component source
        plugin.registers.setdefault("components", []).append(resolved.prefix or resolved.module)
        if key not in table:
            table[key] = resolved
            registry.origin[("components", key)] = plugin.ident
    for key, source in plugin_sources.items():
        table.setdefault(key, source)
