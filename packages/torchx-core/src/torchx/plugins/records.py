"""Registration records: what a plugin says it provides, naming implementations lazily.

Every record is an immutable tuple of strings. An implementation is named as
``"module:attr"`` and imported only when it is used, so discovering installed plugins
imports none of their backends.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from torchx.util.runtime_typing import NamedTuple


class SchedulerPlugin(NamedTuple):
    """A scheduler backend.

    Args:
        name: the scheduler's name (``-s NAME``)
        factory: ``"module:attr"`` of ``create_scheduler(session_name: str, **kwargs) -> Scheduler``
        summary: one line for ``torchx plugins`` and ``torchx runopts``
    """

    name: str
    factory: str
    summary: str = ""


class NamedResourcePlugin(NamedTuple):
    """A named resource (``resource(h=NAME)``).

    Args:
        name: the resource's name
        factory: ``"module:attr"`` of a zero-argument function returning a ``Resource``
    """

    name: str
    factory: str


class ComponentSource(NamedTuple):
    """A package (or module) of component functions.

    Components are named ``<prefix>.<module path relative to module>.<function>``; an
    empty prefix gives the bare relative name (``utils.echo``).

    Args:
        prefix: name prefix, ``""`` for none
        module: importable name of the package or module to search
    """

    prefix: str
    module: str


class TrackerPlugin(NamedTuple):
    """An experiment-tracker backend.

    Args:
        name: the tracker's name (``[torchx:tracker]`` / ``TORCHX_TRACKERS``)
        factory: ``"module:attr"`` of ``create(config: str | None) -> TrackerBase``
    """

    name: str
    factory: str


class WorkspacePlugin(NamedTuple):
    """A workspace builder schedulers can mix in (e.g. ``docker``: patch an image with the CWD).

    Args:
        name: the workspace kind
        mixin: ``"module:Class"`` of a ``WorkspaceMixin`` subclass
        summary: one line of help
    """

    name: str
    mixin: str
    summary: str = ""


class CliCommand(NamedTuple):
    """A ``torchx`` sub-command.

    Args:
        name: the verb (``torchx NAME``)
        factory: ``"module:Class"`` of a ``SubCommand`` subclass (called with no arguments)
        help: one line for ``torchx --help``
    """

    name: str
    factory: str
    help: str = ""


class LegacyModule(NamedTuple):
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


#: registration hook name -> record type it yields
RECORD_TYPES: dict[str, type] = {
    "torchx_schedulers": SchedulerPlugin,
    "torchx_named_resources": NamedResourcePlugin,
    "torchx_components": ComponentSource,
    "torchx_trackers": TrackerPlugin,
    "torchx_workspaces": WorkspacePlugin,
    "torchx_cli_commands": CliCommand,
    "torchx_legacy_modules": LegacyModule,
}

#: hooks called on events (they need the plugin module imported)
EVENT_HOOKS: tuple[str, ...] = ("torchx_pre_submit", "torchx_post_submit")
