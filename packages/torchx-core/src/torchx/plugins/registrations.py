"""Registrations: what a plugin says it provides, naming implementations lazily.

Every registration is a frozen :func:`~torchx.util.record.record` of strings, made
positionally or by keyword (``SchedulerPlugin("name", "module:attr", "summary")``) and
unpackable in field order. An implementation is named as ``"module:attr"`` and imported
only when it is used, so discovering installed plugins imports none of their backends.
(The plugin itself, one installed entry point, is :class:`torchx.plugins.registry.PluginInfo`.)
"""

from __future__ import annotations

from torchx.util.record import record


@record(frozen=True)
class SchedulerPlugin:
    """A scheduler backend.

    Args:
        name: the scheduler's name (``-s NAME``)
        factory: ``"module:attr"`` of ``create_scheduler(session_name: str, **kwargs) -> Scheduler``
        summary: one line for ``torchx plugins`` and ``torchx runopts``
    """

    name: str
    factory: str
    summary: str = ""


@record(frozen=True)
class NamedResourcePlugin:
    """A named resource (``resource(h=NAME)``).

    Args:
        name: the resource's name
        factory: ``"module:attr"`` of a zero-argument function returning a ``Resource``
    """

    name: str
    factory: str


@record(frozen=True)
class ComponentSource:
    """A package (or module) of component functions.

    Components are named ``<prefix>.<module path relative to module>.<function>``; an
    empty prefix gives the bare relative name (``utils.echo``).

    Args:
        prefix: name prefix, ``""`` for none
        module: importable name of the package or module to search
    """

    prefix: str
    module: str


@record(frozen=True)
class TrackerPlugin:
    """An experiment-tracker backend.

    Args:
        name: the tracker's name (``[torchx:tracker]`` / ``TORCHX_TRACKERS``)
        factory: ``"module:attr"`` of ``create(config: str | None) -> TrackerBase``
    """

    name: str
    factory: str


@record(frozen=True)
class WorkspacePlugin:
    """A workspace builder schedulers can mix in (e.g. ``docker``: patch an image with the CWD).

    Args:
        name: the workspace kind
        mixin: ``"module:Class"`` of a ``WorkspaceMixin`` subclass
        summary: one line of help
    """

    name: str
    mixin: str
    summary: str = ""


@record(frozen=True)
class CliCommand:
    """A ``torchx`` sub-command.

    Args:
        name: the verb (``torchx NAME``)
        factory: ``"module:Class"`` of a ``SubCommand`` subclass (called with no arguments)
        help: one line for ``torchx --help``
    """

    name: str
    factory: str
    help: str = ""


@record(frozen=True)
class LegacyModule:
    """An upstream TorchX module path this plugin provides (``import torchx.schedulers.slurm_scheduler``).

    Core installs an import hook that resolves ``name`` to the module ``target`` on import
    (the same module object, nothing is copied), so code written for upstream TorchX imports
    unchanged. A ``name`` that is a package aliases its submodules too: ``torchx.components``
    -> ``torchx_components`` makes ``torchx.components.dist`` load ``torchx_components.dist``.

    Args:
        name: the upstream module path, under ``torchx.``
        target: importable name of the module that provides its public names
    """

    name: str
    target: str


@record(frozen=True)
class Kind:
    """One kind of registration: the hook that yields it and how two of them clash.

    Args:
        hook: the registration hook (``torchx_<kind>``)
        rtype: the record type the hook yields
        clash: the field that names a registration (two records with the same value clash,
            see :mod:`torchx.plugins.registry`); ``""`` for additive kinds that never clash
    """

    hook: str
    rtype: type
    clash: str = "name"

    @property
    def name(self) -> str:
        """The kind's name: the hook's name without ``torchx_`` (``schedulers``)."""
        return self.hook[len("torchx_") :]


#: every kind of registration; a new kind is one entry here (plus its hookspec, which documents it)
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("torchx_schedulers", SchedulerPlugin),
        Kind("torchx_named_resources", NamedResourcePlugin),
        Kind("torchx_components", ComponentSource, clash=""),
        Kind("torchx_trackers", TrackerPlugin),
        Kind("torchx_workspaces", WorkspacePlugin),
        Kind("torchx_cli_commands", CliCommand),
        Kind("torchx_legacy_modules", LegacyModule),
    )
}

#: registration hook name -> registration type it yields
REGISTRATION_TYPES: dict[str, type] = {k.hook: k.rtype for k in KINDS.values()}

#: hooks called on events (they need the plugin module imported)
EVENT_HOOKS: tuple[str, ...] = ("torchx_pre_submit", "torchx_post_submit")


def kind_of(registration: object) -> Kind:
    """The :class:`Kind` of a registration record.

    Raises:
        TypeError: ``registration`` is not a registration record
    """
    for kind in KINDS.values():
        if type(registration) is kind.rtype:
            return kind
    raise TypeError(f"{type(registration).__name__} is not a torchx registration record")
