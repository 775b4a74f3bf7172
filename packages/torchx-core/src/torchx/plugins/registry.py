"""The registry of everything installed plugins provide, and how name clashes resolve.

Clash rule (documented in the README): when two registrations of the same kind share a
name, the one from the more specific source wins. A legacy-group entry point
(``torchx.schedulers`` ...; the user's explicit registration, as in upstream TorchX) beats a
``torchx``-group plugin; between two plugins of the same level, the distribution whose
name sorts first wins. Every shadowed registration is kept in :attr:`Registry.conflicts`
and shown by ``torchx plugins``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchx.plugins.records import (
    RECORD_TYPES,
    CliCommand,
    ComponentSource,
    NamedResourcePlugin,
    SchedulerPlugin,
    TrackerPlugin,
    WorkspacePlugin,
)

#: the entry-point group of torchx plugins
GROUP = "torchx"

#: record kind (hook name without the ``torchx_`` prefix) -> record type
KINDS: dict[str, type] = {hook[len("torchx_") :]: rtype for hook, rtype in RECORD_TYPES.items()}


@dataclass
class PluginInfo:
    """One installed plugin (an entry point of the ``torchx`` group or of a legacy group).

    Attributes:
        name: the entry point's name
        dist: the distribution that installs it
        version: that distribution's version
        group: the entry-point group
        value: the entry point's value (module, or ``module:attr`` for legacy entries)
        registers: record kind -> names it registers
        event_hooks: event hooks its module implements
        errors: what went wrong loading it or calling its hooks
        module_file: the plugin module's file (to notice edits)
    """

    name: str
    dist: str
    version: str
    group: str
    value: str
    registers: dict[str, list[str]] = field(default_factory=dict)
    event_hooks: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    module_file: str = ""

    @property
    def ident(self) -> str:
        """``dist:entry-point-name``."""
        return f"{self.dist}:{self.name}"


@dataclass
class Conflict:
    """A registration that lost a name clash."""

    kind: str
    name: str
    winner: str
    loser: str
    winner_value: str
    loser_value: str


@dataclass
class Registry:
    """Everything installed plugins register, clashes resolved."""

    plugins: list[PluginInfo] = field(default_factory=list)
    schedulers: dict[str, SchedulerPlugin] = field(default_factory=dict)
    named_resources: dict[str, NamedResourcePlugin] = field(default_factory=dict)
    components: list[ComponentSource] = field(default_factory=list)
    trackers: dict[str, TrackerPlugin] = field(default_factory=dict)
    workspaces: dict[str, WorkspacePlugin] = field(default_factory=dict)
    cli_commands: dict[str, CliCommand] = field(default_factory=dict)
    #: (kind, name) -> ident of the plugin that provides the winning registration
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)

    def table(self, kind: str) -> dict[str, Any]:
        """The name -> record table of ``kind`` (not for ``components``)."""
        table: dict[str, Any] = getattr(self, kind)
        return table

    def add(self, plugin: PluginInfo, record: Any, level: int, levels: dict[str, int]) -> None:
        """Adds ``record`` from ``plugin``; ``level`` ranks its source (higher wins a clash)."""
        kind = next(k for k, t in KINDS.items() if isinstance(record, t))
        if kind == "components":
            if record not in self.components:
                self.components.append(record)
            plugin.registers.setdefault(kind, []).append(record.prefix or record.module)
            self.origin[(kind, record.prefix + "|" + record.module)] = plugin.ident
            return
        table = self.table(kind)
        name = record.name
        plugin.registers.setdefault(kind, []).append(name)
        current = table.get(name)
        if current is None:
            table[name] = record
            self.origin[(kind, name)] = plugin.ident
            return
        owner = self.origin[(kind, name)]
        if level > levels.get(owner, 0):
            self.conflicts.append(Conflict(kind, name, plugin.ident, owner, record[1], current[1]))
            table[name] = record
            self.origin[(kind, name)] = plugin.ident
        elif current != record:
            self.conflicts.append(Conflict(kind, name, owner, plugin.ident, current[1], record[1]))

    @property
    def errors(self) -> list[tuple[str, str]]:
        """(plugin ident, error) for every plugin that failed in part or whole."""
        return [(p.ident, e) for p in self.plugins for e in p.errors]

    def event_hook_plugins(self) -> list[PluginInfo]:
        """Plugins whose module implements an event hook."""
        return [p for p in self.plugins if p.event_hooks and not p.errors]

    def to_data(self) -> dict[str, Any]:
        """Plain data (for the cache and ``torchx plugins --json``)."""
        return {
            "plugins": [vars(p) for p in self.plugins],
            "records": {
                kind: [list(r) for r in (self.components if kind == "components" else self.table(kind).values())]
                for kind in KINDS
            },
            "origin": [[k, n, v] for (k, n), v in self.origin.items()],
            "conflicts": [vars(c) for c in self.conflicts],
        }

    @staticmethod
    def from_data(data: dict[str, Any]) -> Registry:
        """Inverse of :meth:`to_data`."""
        reg = Registry(plugins=[PluginInfo(**p) for p in data["plugins"]])
        for kind, rows in data["records"].items():
            rtype = KINDS[kind]
            if kind == "components":
                reg.components = [rtype(*r) for r in rows]
            else:
                reg.table(kind).update({r[0]: rtype(*r) for r in rows})
        reg.origin = {(k, n): v for k, n, v in data["origin"]}
        reg.conflicts = [Conflict(**c) for c in data["conflicts"]]
        return reg
