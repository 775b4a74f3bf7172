"""Registrations: what a plugin provides, each naming its implementation lazily.

Every registration is a frozen :func:`~torchx.util.record.record` of strings, made
positionally or by keyword (``SchedulerPlugin("name", "module:attr", "summary")``) and
unpackable in field order: a name, a ``"module:attr"`` reference (:class:`Ref`, imported only
when used), and for some kinds one line of help. A distribution declares them as entry points
of the group ``torchx``, ``<kind>.<name> = "module:attr"`` (:func:`from_entry_point`; the older hook
modules of that group: :func:`is_registration`), so discovering plugins imports none of their code.
"""

from __future__ import annotations

from torchx.util.record import fields_of, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
    """An upstream TorchX module path this plugin provides (``import torchx.schedulers.slurm_scheduler``
    is the module ``target`` itself; a package's submodules too: see :mod:`torchx.compat.legacy_import`).

    Args:
        name: the upstream module path, under ``torchx.``
        target: importable name of the module that provides its public names
    """

    name: str
    target: str


@record(frozen=True)
class Kind:
    """One kind of registration: its entry-point name, its record type and how two of them clash.

    Args:
        hook: ``torchx_<kind>``, the name of the kind (and of its registration hook in hook modules)
        rtype: the record type
        entry: the entry-point name prefix (``scheduler`` in ``scheduler.slurm = "mod:attr"``)
        clash: the field that names a registration (two records with the same value clash,
            see :mod:`torchx.plugins.registry`); ``""`` for additive kinds that never clash
    """

    hook: str
    rtype: type
    entry: str
    clash: str = "name"

    @property
    def name(self) -> str:
        """The kind's name: the hook's name without ``torchx_`` (``schedulers``)."""
        return self.hook[len("torchx_") :]

    def make(self, name: str, target: str, text: str = "") -> Any:
        """The record of this kind naming ``name`` -> ``target`` (``text``: its help line, if it has one)."""
        return self.rtype(name, target, text) if len(fields_of(self.rtype)) == 3 else self.rtype(name, target)


#: every kind of registration; a new kind is one entry here (plus its documentation)
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("torchx_schedulers", SchedulerPlugin, "scheduler"),
        Kind("torchx_named_resources", NamedResourcePlugin, "named_resource"),
        Kind("torchx_components", ComponentSource, "component", clash=""),
        Kind("torchx_trackers", TrackerPlugin, "tracker"),
        Kind("torchx_workspaces", WorkspacePlugin, "workspace"),
        Kind("torchx_cli_commands", CliCommand, "cli_command"),
        Kind("torchx_legacy_modules", LegacyModule, "legacy_module"),
    )
}

#: entry-point name prefix -> kind
ENTRY_KINDS: dict[str, Kind] = {k.entry: k for k in KINDS.values()}
#: record type -> kind
_BY_TYPE: dict[type, Kind] = {k.rtype: k for k in KINDS.values()}

#: the entry-point names of a module of event hooks (``hooks.<name> = "module"``) and of plugin API levels
HOOKS, API = "hooks", "api"

#: hooks called on events (their modules are imported on the first event)
EVENT_HOOKS: tuple[str, ...] = ("torchx_pre_submit", "torchx_post_submit")


def kind_of(registration: object) -> Kind:
    """The :class:`Kind` of a registration record.

    Raises:
        TypeError: ``registration`` is not a registration record
    """
    kind = _BY_TYPE.get(type(registration))
    if kind is None:
        raise TypeError(f"{type(registration).__name__} is not a torchx registration record")
    return kind


def is_registration(name: str) -> bool:
    """True if the entry point ``name`` of the group ``torchx`` is a registration (``<kind>.<name>``, a dotted name
    of no kind: a malformed one; ``component``; ``api``), False for an older hook module (``slurm = "mod"``)."""
    return "." in name or name in ("component", API)


def from_entry_point(name: str, value: str) -> Any:
    """The record an entry point ``<kind>.<name> = "module:attr  # help"`` of the group ``torchx`` declares.

    ``component`` alone (no name) is a component source without a prefix; the text after ``#``
    is the record's help line (schedulers, workspaces, CLI commands).

    Raises:
        ValueError: the kind is unknown, the name or the reference is empty
    """
    prefix, _, rest = name.partition(".")
    kind = ENTRY_KINDS.get(prefix)
    target, _, text = value.partition("#")
    if kind is None or not target.strip() or (not rest and kind.entry != "component"):
        known = ", ".join([*ENTRY_KINDS, HOOKS, API])
        why = f"unknown kind {prefix!r}" if kind is None else "no name" if not rest else "no module"
        raise ValueError(f'entry point {name} = {value!r}: {why}; write <kind>.<name> = "module:attr" (kinds: {known})')
    return kind.make(rest, target.strip(), text.strip())


class Ref:
    """A lazy reference to ``"module:attr"`` (or ``"module"``): imported on first use, then kept.

    Calling it calls what it names, so a ``Ref`` stands in for a scheduler factory, a named
    resource or a tracker factory without importing it.
    """

    __slots__ = ("_obj", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._obj: Any = None

    def load(self) -> Any:
        """The attribute (or module) named.

        Raises:
            PluginLoadError: the module cannot be imported or lacks the attribute
        """
        if self._obj is None:
            import importlib

            from torchx.plugins import PluginLoadError

            module_name, _, attr = self.path.partition(":")
            try:
                obj: Any = importlib.import_module(module_name)
            except Exception as e:
                raise PluginLoadError(
                    f"cannot import {module_name!r} (from {self.path!r}): {type(e).__name__}: {e}"
                ) from e
            if attr in vars(obj):  # a generated name may hold dots (``register.named_resource``)
                obj = vars(obj)[attr]
            else:
                for part in attr.split(".") if attr else []:
                    try:
                        obj = getattr(obj, part)
                    except AttributeError:
                        raise PluginLoadError(
                            f"{module_name!r} has no attribute {attr!r} (from {self.path!r})"
                        ) from None
            self._obj = obj
        return self._obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self.path}>"
