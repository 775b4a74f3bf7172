"""The registry of everything installed plugins provide, and how name clashes resolve.

Clash rule (documented in the README): when two registrations of the same kind share a
name, the one from the more specific source wins. A legacy-group entry point
(``torchx.schedulers`` ...; the user's explicit registration, as in upstream TorchX) beats a
``torchx``-group plugin; between two plugins of the same level, the distribution whose
name sorts first wins. Every shadowed registration is kept in :attr:`Registry.conflicts`
and shown by ``torchx plugins``.
"""

from __future__ import annotations

from torchx.plugins.registrations import (
    REGISTRATION_TYPES,
    CliCommand,
    ComponentSource,
    LegacyModule,
    NamedResourcePlugin,
    SchedulerPlugin,
    TrackerPlugin,
    WorkspacePlugin,
)
from torchx.util.record import field, fields_of, record, to_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the entry-point group of torchx plugins
GROUP = "torchx"

#: registration kind (hook name without the ``torchx_`` prefix) -> registration type
KINDS: dict[str, type] = {hook[len("torchx_") :]: rtype for hook, rtype in REGISTRATION_TYPES.items()}


@record
class PluginInfo:
    """One installed plugin (an entry point of the ``torchx`` group or of a legacy group).

    Attributes:
        name: the entry point's name
        dist: the distribution that installs it
        version: that distribution's version
        group: the entry-point group
        value: the entry point's value (module, or ``module:attr`` for legacy entries)
        registers: registration kind -> names it registers
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

    def __repr__(self) -> str:
        return f"PluginInfo({self.ident}, group={self.group!r}, errors={self.errors!r})"


@record(frozen=True)
class Conflict:
    """A registration that lost a name clash."""

    kind: str
    name: str
    winner: str
    loser: str
    winner_value: str
    loser_value: str


def _target(registration: Any) -> str:
    """The ``module:attr`` (or module) a registration names: its second field."""
    return str(getattr(registration, fields_of(registration)[1].name))


class Registry:
    """Everything installed plugins register, clashes resolved."""

    def __init__(self, plugins: list[PluginInfo] | None = None) -> None:
        self.plugins: list[PluginInfo] = plugins if plugins is not None else []
        self.schedulers: dict[str, SchedulerPlugin] = {}
        self.named_resources: dict[str, NamedResourcePlugin] = {}
        self.components: list[ComponentSource] = []
        self.trackers: dict[str, TrackerPlugin] = {}
        self.workspaces: dict[str, WorkspacePlugin] = {}
        self.cli_commands: dict[str, CliCommand] = {}
        #: upstream module path (``torchx.schedulers.slurm_scheduler``) -> the plugin module providing it
        self.legacy_modules: dict[str, LegacyModule] = {}
        #: (kind, name) -> ident of the plugin that provides the winning registration
        self.origin: dict[tuple[str, str], str] = {}
        self.conflicts: list[Conflict] = []

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
            self.conflicts.append(Conflict(kind, name, plugin.ident, owner, _target(record), _target(current)))
            table[name] = record
            self.origin[(kind, name)] = plugin.ident
        elif current != record:
            self.conflicts.append(Conflict(kind, name, owner, plugin.ident, _target(current), _target(record)))

    def legacy_target(self, module: str) -> str | None:
        """The module that provides the upstream module path ``module``, or None.

        A registered package path covers its submodules: with ``torchx.components`` ->
        ``torchx_components``, ``torchx.components.dist`` resolves to ``torchx_components.dist``.
        """
        name = module
        while "." in name:
            record = self.legacy_modules.get(name)
            if record is not None:
                return record.target + module[len(name) :]
            name = name.rpartition(".")[0]
        return None

    @property
    def errors(self) -> list[tuple[str, str]]:
        """(plugin ident, error) for every plugin that failed in part or whole."""
        return [(p.ident, e) for p in self.plugins for e in p.errors]

    def failure_summary(self) -> str | None:
        """One line naming the plugins that failed and the first error of each (None if none did)."""
        failed = [p for p in self.plugins if p.errors]
        if not failed:
            return None
        parts = [f"{p.dist} {p.version} ({p.name}): {p.errors[0]}" for p in failed[:3]]
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        return f"plugin error in {'; '.join(parts)}{more}; see `torchx plugins`"

    def failures_for(self, kind: str, name: str) -> list[PluginInfo]:
        """Failed plugins that may be the one meant to register ``name`` of ``kind``: the ones whose
        entry point is called ``name`` if any, else every plugin that failed to load entirely."""
        failed = [p for p in self.plugins if p.errors and kind not in p.registers]
        named = [p for p in failed if p.name == name]
        return named or [p for p in failed if not p.registers]

    def event_hook_plugins(self) -> list[PluginInfo]:
        """Plugins whose module implements an event hook."""
        return [p for p in self.plugins if p.event_hooks]

    def to_data(self) -> dict[str, Any]:
        """Plain data (for the cache and ``torchx plugins --json``)."""
        return {
            "plugins": [to_dict(p) for p in self.plugins],
            "records": {
                kind: [
                    list(to_dict(r).values())
                    for r in (self.components if kind == "components" else self.table(kind).values())
                ]
                for kind in KINDS
            },
            "origin": [[k, n, v] for (k, n), v in self.origin.items()],
            "conflicts": [to_dict(c) for c in self.conflicts],
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
