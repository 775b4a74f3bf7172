"""torchx plugins: pluggy hooks that register schedulers, named resources, components,
trackers, workspaces, CLI commands and upstream module paths (``LegacyModule``), plus submit-time event hooks.

Plugin authors need only::

    from torchx.plugins import hookimpl, SchedulerPlugin, ComponentSource  # ...

See :mod:`torchx.plugins.hookspecs` for every hook with an example. Importing this
package is cheap: pluggy is loaded only when a hook module asks for ``hookimpl`` or when
plugins must be (re)discovered.

Upstream TorchX's plugin API is here too (each name imported on first use): ``register``
(``@register.scheduler()``, ``@register.tracker()``, ``@register.named_resource(...)``) for
modules of the ``torchx_plugins.*`` namespace packages, ``powers_of_two_gpus``,
``halve_mem_down_to``, ``WHOLE``/``HALF``/``QUARTER``/``EIGHTH``/``SIXTEENTH``,
``resource_tags``, and the registry view ``registry()`` / ``PluginRegistry`` / ``PluginType`` /
``RegistrationError`` (:mod:`torchx.compat.authoring`, :mod:`torchx.compat.namespace`,
:mod:`torchx.compat.plugin_registry`). ``torchx.plugins.registry`` is both our registry module
and, called, upstream's ``registry()``.
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
        SchedulerPlugin,
        TrackerPlugin,
        WorkspacePlugin,
    )
    from torchx.plugins.registry import PluginInfo, Registry

    hookimpl: pluggy.HookimplMarker
    hookspec: pluggy.HookspecMarker

#: re-exported name -> the submodule that defines it (imported on first use: ``import torchx``
#: loads this package for its import hook, and must stay cheap)
_LAZY: dict[str, str] = {
    **dict.fromkeys(("OLDEST_PLUGIN_API_LEVEL", "PLUGIN_API_LEVEL"), "torchx.plugins.api_level"),
    **dict.fromkeys(
        (
            "CliCommand",
            "ComponentSource",
            "LegacyModule",
            "NamedResourcePlugin",
            "SchedulerPlugin",
            "TrackerPlugin",
            "WorkspacePlugin",
        ),
        "torchx.plugins.registrations",
    ),
    **dict.fromkeys(("PluginInfo", "Registry"), "torchx.plugins.registry"),
    # upstream TorchX's names (the nightly's plugin API)
    **dict.fromkeys(
        (
            "EIGHTH",
            "HALF",
            "QUARTER",
            "SIXTEENTH",
            "WHOLE",
            "PluginType",
            "halve_mem_down_to",
            "powers_of_two_gpus",
            "register",
            "resource_tags",
        ),
        "torchx.compat.authoring",
    ),
    **dict.fromkeys(("PluginRegistry", "RegistrationError"), "torchx.compat.plugin_registry"),
}

__all__ = [
    "EIGHTH",
    "HALF",
    "QUARTER",
    "SIXTEENTH",
    "WHOLE",
    "PluginRegistry",
    "PluginType",
    "RegistrationError",
    "halve_mem_down_to",
    "powers_of_two_gpus",
    "register",
    "registry",
    "resource_tags",
    "CliCommand",
    "ComponentSource",
    "LegacyModule",
    "NamedResourcePlugin",
    "OLDEST_PLUGIN_API_LEVEL",
    "PLUGIN_API_LEVEL",
    "PluginInfo",
    "PluginLoadError",
    "Registry",
    "SchedulerPlugin",
    "SubmissionRejected",
    "TrackerPlugin",
    "WorkspacePlugin",
    "discovering",
    "get_registry",
    "hookimpl",
    "hookspec",
    "load_attr",
    "reset",
]

_registry: Registry | None = None
#: the thread whose discovery is importing plugin modules (None: none is)
_discoverer: int | None = None
#: held while the registry is loaded: other threads wait for it instead of loading it again
_loading = _thread.RLock()
#: while discovery imports namespace modules: what the entry points registered (their upstream
#: module paths resolve, so a plugin module may import ``torchx.schedulers.local_scheduler``)
_partial: Registry | None = None

REENTRANT_LOOKUP = (
    "torchx plugins are being discovered: a plugin module must not look plugins up (named resources,"
    " schedulers, trackers) when it is imported; look them up inside a function"
)


class SubmissionRejected(Exception):
    """Raised by a ``torchx_pre_submit`` hook to refuse an app; the message says why."""


class PluginLoadError(Exception):
    """A registered implementation (``module:attr``) cannot be imported."""


def __getattr__(name: str) -> Any:
    if name == "registry":  # the submodule, callable as upstream's ``registry()``
        import importlib

        return importlib.import_module(f"{__name__}.registry")
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in ("hookimpl", "hookspec"):
        import pluggy

        marker: pluggy.HookimplMarker | pluggy.HookspecMarker = (
            pluggy.HookimplMarker("torchx") if name == "hookimpl" else pluggy.HookspecMarker("torchx")
        )
        globals()[name] = marker
        return marker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_registry(refresh: bool = False) -> Registry:
    """Everything the installed plugins register (cached in memory and on disk).

    Args:
        refresh: ignore the caches and discover again
    """
    global _registry, _discoverer
    if _registry is not None and not refresh:
        return _registry
    if discovering():
        raise RuntimeError(REENTRANT_LOOKUP)
    with _loading:  # a thread that comes while another loads it waits, then takes that one's
        if _registry is not None and not refresh:
            return _registry
        from torchx.plugins import cache

        registry = None if refresh else cache.load()
        if registry is None:
            from torchx.plugins.discovery import discover

            _discoverer = _thread.get_ident()
            try:
                registry = discover()
            finally:
                _discoverer = None
            cache.store(registry)
        _registry = registry
        return registry


def partial_registry() -> Registry | None:
    """During discovery, in the discovering thread, what the entry points registered once they
    are all read (None before, and outside discovery): upstream module paths resolve against it."""
    return _partial if discovering() else None


def discovering() -> bool:
    """True while this thread's discovery imports plugin modules (a lookup then would see half
    the plugins)."""
    return _discoverer is not None and _discoverer == _thread.get_ident()


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


def load_attr(path: str) -> Any:
    """Imports ``"module:attr"`` (or ``"module"``) and returns the attribute (or module).

    Raises:
        PluginLoadError: the module cannot be imported or lacks the attribute
    """
    import importlib

    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:
        raise PluginLoadError(f"cannot import {module_name!r} (from {path!r}): {type(e).__name__}: {e}") from e
    if attr and attr in vars(obj):  # a generated name may hold dots (``register.named_resource``)
        return vars(obj)[attr]
    for part in attr.split(".") if attr else []:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginLoadError(f"{module_name!r} has no attribute {attr!r} (from {path!r})") from None
    return obj
