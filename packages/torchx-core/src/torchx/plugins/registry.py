"""The registry: everything installed plugins provide, one table per kind, read as ``get_registry().schedulers``
(``.named_resources``, ``.components``, ``.trackers``, ``.workspaces``, ``.cli_commands``, ``.legacy_modules``), and
the one rule for name clashes.

Every source of registrations (:mod:`torchx.plugins.discovery`, the adapters of :mod:`torchx.compat`) hands each one
to :meth:`Registry.add` with the plugin it comes from; the registry alone decides which one is used.

Clash rule (documented in the README): when two registrations of the same kind share a name, the one from the
higher-ranked source wins (:data:`SOURCE_RANKS`). A legacy-group entry point (``torchx.schedulers`` ...; the user's
explicit registration, as in upstream TorchX) beats a registration of the group ``torchx`` (an entry point or a hook
module); between two of the same rank, the one from the distribution whose name sorts first wins (namespace modules,
rank 0: the first one found). Every shadowed registration is kept in :attr:`Registry.conflicts` and shown by
``torchx plugins``. Components never clash (each source adds names), except that legacy ``torchx.components`` entries
hide the builtin components (:func:`torchx.compat.legacy.replace_components`). Another source of registrations is one
:data:`SOURCE_RANKS` entry (its :class:`PluginInfo` ``group``).
"""

from __future__ import annotations

import sys

from torchx.compat.registry_module import CallableRegistryModule
from torchx.plugins.registrations import (
    KINDS,
    CliCommand,
    ComponentSource,
    LegacyModule,
    NamedResourcePlugin,
    SchedulerPlugin,
    TrackerPlugin,
    WorkspacePlugin,
    kind_of,
)
from torchx.util.record import field, fields_of, record, to_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the entry-point group of torchx plugins: registrations and the older hook modules (:mod:`torchx.compat.hook_modules`)
GROUP = "torchx"

#: upstream TorchX's entry-point groups (read by :mod:`torchx.compat.legacy`)
UPSTREAM_GROUPS = (
    "torchx.schedulers",
    "torchx.named_resources",
    "torchx.components",
    "torchx.tracker",
    "torchx.cli.cmds",
)
#: source of registrations (``PluginInfo.group``) -> its rank in a name clash (higher wins): upstream's
#: groups 2, the group ``torchx`` (registrations and hook modules) 1, any other (namespace packages) 0
SOURCE_RANKS: dict[str, int] = {GROUP: 1, **dict.fromkeys(UPSTREAM_GROUPS, 2)}


@record
class PluginInfo:
    """One installed plugin: a distribution's registrations in the group ``torchx``, or one entry
    point (a hook module, a legacy entry), or one namespace module.

    Attributes:
        name: the entry point's name (``""`` for a distribution's registrations)
        dist: the distribution that installs it
        version: that distribution's version
        group: the entry-point group (or namespace package)
        value: the entry point's value (module, or ``module:attr`` for legacy entries)
        registers: registration kind -> names it registers
        event_hooks: event hooks its hook module implements (known once it was imported)
        hook_modules: modules of event hooks, imported and registered with pluggy on the first event
        errors: what went wrong loading it or calling its hooks
        incompatible: True if it was written for a plugin API this core does not implement
            (see :mod:`torchx.plugins.api_level`; nothing was loaded from it, ``errors`` says
            why and which package to upgrade)
        watch: files and folders whose change may change what a plugin module registers (compat
            sources that import one): the plugin cache is stale once one of them changes
    """

    name: str
    dist: str
    version: str
    group: str
    value: str
    registers: dict[str, list[str]] = field(default_factory=dict)
    event_hooks: list[str] = field(default_factory=list)
    hook_modules: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    incompatible: bool = False
    watch: list[str] = field(default_factory=list)

    @property
    def ident(self) -> str:
        """``dist:entry-point-name`` (``dist`` for its registrations)."""
        return f"{self.dist}:{self.name}" if self.name else self.dist

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


def _key(registration: Any) -> str:
    """The name a registration is known by in its kind's table (what clashes)."""
    kind = kind_of(registration)
    if kind.clash:
        return str(getattr(registration, kind.clash))
    return "|".join(str(v) for v in registration)


class Registry:
    """Everything installed plugins register, clashes resolved."""

    def __init__(self, plugins: list[PluginInfo] | None = None) -> None:
        self.plugins: list[PluginInfo] = plugins if plugins is not None else []
        #: registration kind -> (name -> the record that won it); components keyed ``prefix|module``
        self.tables: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        #: (kind, name) -> ident of the plugin that provides the winning registration
        self.origin: dict[tuple[str, str], str] = {}
        self.conflicts: list[Conflict] = []
        #: the pluggy manager holding the plugins' hook modules (set by discovery, or by
        #: :mod:`torchx.plugins.events` on first use; never cached to disk)
        self.plugin_manager: Any = None
        #: False while discovery fills it (a plugin module it imports sees it so far)
        self.complete = False
        self._ranks: dict[str, tuple[int, str]] = {}

    # the read API: one typed table per kind
    @property
    def schedulers(self) -> dict[str, SchedulerPlugin]:
        return self.tables["schedulers"]

    @property
    def named_resources(self) -> dict[str, NamedResourcePlugin]:
        return self.tables["named_resources"]

    @property
    def components(self) -> list[ComponentSource]:
        """Component sources, in search order."""
        return list(self.tables["components"].values())

    @property
    def trackers(self) -> dict[str, TrackerPlugin]:
        return self.tables["trackers"]

    @property
    def workspaces(self) -> dict[str, WorkspacePlugin]:
        return self.tables["workspaces"]

    @property
    def cli_commands(self) -> dict[str, CliCommand]:
        return self.tables["cli_commands"]

    @property
    def legacy_modules(self) -> dict[str, LegacyModule]:
        """Upstream module path (``torchx.schedulers.slurm_scheduler``) -> the plugin module providing it."""
        return self.tables["legacy_modules"]

    def add(self, plugin: PluginInfo, registration: Any) -> None:
        """Adds ``registration`` from ``plugin``, resolving a name clash by the rule above."""
        kind = kind_of(registration)
        self._ranks.setdefault(plugin.ident, (SOURCE_RANKS.get(plugin.group, 0), plugin.dist.lower()))
        name = _key(registration)
        # a component source is listed by its prefix, or its module without one
        plugin.registers.setdefault(kind.name, []).append(name if kind.clash else registration[0] or registration[1])
        table = self.tables[kind.name]
        current = table.get(name)
        if current is None:
            table[name] = registration
            self.origin[(kind.name, name)] = plugin.ident
            if not kind.clash:  # component sources are searched in distribution order, whatever source
                self.tables[kind.name] = dict(
                    sorted(table.items(), key=lambda i: self._ranks[self.origin[(kind.name, i[0])]][1])
                )
            return
        owner = self.origin[(kind.name, name)]
        (rank, dist), (owner_rank, owner_dist) = self._ranks[plugin.ident], self._ranks.get(owner, (0, ""))
        if rank > owner_rank or (rank == owner_rank > 0 and dist < owner_dist):
            self.conflicts.append(
                Conflict(kind.name, name, plugin.ident, owner, _target(registration), _target(current))
            )
            table[name] = registration
            self.origin[(kind.name, name)] = plugin.ident
        elif current != registration:
            self.conflicts.append(
                Conflict(kind.name, name, owner, plugin.ident, _target(current), _target(registration))
            )

    @property
    def errors(self) -> list[tuple[str, str]]:
        """(plugin ident, error) for every plugin that failed in part or whole."""
        return [(p.ident, e) for p in self.plugins for e in p.errors]

    def failure_summary(self) -> str | None:
        """One line naming the plugins that failed and the first error of each (None if none did)."""
        failed = [p for p in self.plugins if p.errors]
        if not failed:
            return None
        parts = [f"{p.dist} {p.version}{f' ({p.name})' if p.name else ''}: {p.errors[0]}" for p in failed[:3]]
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        return f"plugin error in {'; '.join(parts)}{more}; see `torchx plugins`"

    def failures_for(self, kind: str, name: str) -> list[PluginInfo]:
        """Failed plugins that may be the one meant to register ``name`` of ``kind``: the ones whose
        entry point is called ``name`` if any, else every plugin that failed to load entirely."""
        failed = [p for p in self.plugins if p.errors and kind not in p.registers]
        named = [p for p in failed if p.name == name]
        return named or [p for p in failed if not p.registers]

    def event_hook_plugins(self) -> list[PluginInfo]:
        """Plugins with modules of event hooks."""
        return [p for p in self.plugins if p.hook_modules]

    def to_data(self) -> dict[str, Any]:
        """Plain data (for the cache and ``torchx plugins --json``)."""
        return {
            "plugins": [to_dict(p) for p in self.plugins],
            "records": {kind: [list(r) for r in table.values()] for kind, table in self.tables.items()},
            "origin": [[k, n, v] for (k, n), v in self.origin.items()],
            "conflicts": [to_dict(c) for c in self.conflicts],
        }

    @staticmethod
    def from_data(data: dict[str, Any]) -> Registry:
        """Inverse of :meth:`to_data`."""
        reg = Registry(plugins=[PluginInfo(**p) for p in data["plugins"]])
        for kind, rows in data["records"].items():
            records = [KINDS[kind].rtype(*r) for r in rows]
            reg.tables[kind] = {_key(r): r for r in records}
        reg.origin = {(k, n): v for k, n, v in data["origin"]}
        reg.conflicts = [Conflict(**c) for c in data["conflicts"]]
        return reg


sys.modules[__name__].__class__ = CallableRegistryModule  # upstream's ``torchx.plugins.registry()``
