"""torchx plugins: what installed distributions register (schedulers, named resources,
components, trackers, workspaces, CLI commands, upstream module paths, event hooks).

A distribution registers each as one entry point of the group ``torchx``,
``<kind>.<name> = "module:attr"``, read from its metadata without importing it
(:mod:`torchx.plugins.discovery`); each ``"module:attr"`` is a :class:`Ref`, imported when
used. :func:`get_registry` returns the one :class:`Registry`; event hooks
(:mod:`torchx.plugins.hookspecs`) are pluggy hook implementations (``hookimpl``). Importing
this package is cheap: pluggy is loaded only when a hook module asks for ``hookimpl`` or on
the first event.

Upstream TorchX's plugin API is here too, each name imported on first use from
:mod:`torchx.compat` (``register``, ``registry()``, ``PluginRegistry``, ``PluginType``, ...):
the older ways to register are adapters feeding the same registry.
"""

from __future__ import annotations

import _thread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import pluggy

    from torchx.compat.authoring import (
        EIGHTH,
        HALF,
        QUARTER,
        SIXTEENTH,
        WHOLE,
        PluginType,
        halve_mem_down_to,
        powers_of_two_gpus,
        register,
        resource_tags,
    )
    from torchx.compat.plugin_registry import PluginRegistry, RegistrationError
    from torchx.plugins.api_level import OLDEST_PLUGIN_API_LEVEL, PLUGIN_API_LEVEL
    from torchx.plugins.registrations import (
        CliCommand,
        ComponentSource,
        LegacyModule,
        NamedResourcePlugin,
        Ref,
        SchedulerPlugin,
        TrackerPlugin,
        WorkspacePlugin,
    )
    from torchx.plugins.registry import PluginInfo, Registry

    hookimpl: pluggy.HookimplMarker
    hookspec: pluggy.HookspecMarker

#: submodule -> the names it defines that this package re-exports (each imported on first use:
#: ``import torchx`` loads this package for its import hook, and must stay cheap)
_EXPORTS: dict[str, str] = {
    "torchx.plugins.api_level": "OLDEST_PLUGIN_API_LEVEL PLUGIN_API_LEVEL",
    "torchx.plugins.registrations": "CliCommand ComponentSource LegacyModule NamedResourcePlugin Ref SchedulerPlugin"
    " TrackerPlugin WorkspacePlugin",
    "torchx.plugins.registry": "PluginInfo Registry",
    # upstream TorchX's names (the nightly's plugin API)
    "torchx.compat.authoring": "EIGHTH HALF QUARTER SIXTEENTH WHOLE PluginType halve_mem_down_to powers_of_two_gpus"
    " register resource_tags",
    "torchx.compat.plugin_registry": "PluginRegistry RegistrationError",
}
#: re-exported name -> the submodule that defines it
_LAZY: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names.split()}

__all__ = [
    "CliCommand",
    "ComponentSource",
    "EIGHTH",
    "HALF",
    "LegacyModule",
    "NamedResourcePlugin",
    "OLDEST_PLUGIN_API_LEVEL",
    "PLUGIN_API_LEVEL",
    "PluginInfo",
    "PluginLoadError",
    "PluginRegistry",
    "PluginType",
    "QUARTER",
    "Ref",
    "RegistrationError",
    "Registry",
    "SIXTEENTH",
    "SchedulerPlugin",
    "SubmissionRejected",
    "TrackerPlugin",
    "WHOLE",
    "WorkspacePlugin",
    "get_registry",
    "halve_mem_down_to",
    "hookimpl",
    "hookspec",
    "powers_of_two_gpus",
    "register",
    "registry",
    "reset",
    "resource_tags",
]

_registry: Registry | None = None
#: the registry discovery is filling (None: none is); only the discovering thread can see it,
#: through the re-entrant lock the others wait on
_building: Registry | None = None
#: held while the registry is loaded: other threads wait for it instead of loading it again
_loading = _thread.RLock()


class SubmissionRejected(Exception):
    """Raised by a ``torchx_pre_submit`` hook to refuse an app; the message says why."""


class PluginLoadError(Exception):
    """A registered implementation (``module:attr``) cannot be imported."""


def __getattr__(name: str) -> Any:
    import importlib

    if name == "registry":  # the submodule, callable as upstream's ``registry()``
        return importlib.import_module(f"{__name__}.registry")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in ("hookimpl", "hookspec"):
        import pluggy

        value = (pluggy.HookimplMarker if name == "hookimpl" else pluggy.HookspecMarker)("torchx")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def get_registry(refresh: bool = False) -> Registry:
    """The one registry of everything the installed plugins register (cached in memory and on disk).

    A plugin module that discovery imports (a hook module, a namespace module) may look plugins
    up: it gets the registry being filled, with everything registered so far (every entry point's).

    Args:
        refresh: ignore the caches and discover again
    """
    global _registry, _building
    if _registry is not None and not refresh:
        return _registry
    with _loading:  # a thread that comes while another loads it waits, then takes that one's
        if _building is not None:  # this thread's discovery imported a module that asks
            return _building
        if _registry is not None and not refresh:
            return _registry
        from torchx.plugins import cache
        from torchx.plugins.registry import Registry

        _building = Registry()
        try:
            registry = None if refresh else cache.load()
            if registry is None:
                from torchx.plugins.discovery import discover

                registry = _building
                discover(registry)
                cache.store(registry)
        finally:
            _building = None
        registry.complete = True
        _registry = registry
        return registry


def reset() -> None:
    """Forgets the in-memory registry (the next lookup reads the disk cache or rediscovers), and
    the named resources found through it."""
    global _registry
    _registry = None
    import sys

    events = sys.modules.get("torchx.plugins.events")
    if events is not None:
        events.forget()

    named = sys.modules.get("torchx.specs.named_resources")
    if named is not None:
        named._named_resource_factories.forget_discovered()
