"""torchx plugins: pluggy hooks that register schedulers, named resources, components,
trackers, workspaces, CLI commands and upstream module paths (``LegacyModule``), plus submit-time event hooks.

Plugin authors need only::

    from torchx.plugins import hookimpl, SchedulerPlugin, ComponentSource  # ...

See :mod:`torchx.plugins.hookspecs` for every hook with an example. Importing this
package is cheap: pluggy is loaded only when a hook module asks for ``hookimpl`` or when
plugins must be (re)discovered.
"""

from __future__ import annotations

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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import pluggy

    hookimpl: pluggy.HookimplMarker
    hookspec: pluggy.HookspecMarker

__all__ = [
    "CliCommand",
    "ComponentSource",
    "LegacyModule",
    "NamedResourcePlugin",
    "PluginInfo",
    "PluginLoadError",
    "Registry",
    "SchedulerPlugin",
    "SubmissionRejected",
    "TrackerPlugin",
    "WorkspacePlugin",
    "get_registry",
    "hookimpl",
    "hookspec",
    "load_attr",
    "reset",
]

_registry: Registry | None = None


class SubmissionRejected(Exception):
    """Raised by a ``torchx_pre_submit`` hook to refuse an app; the message says why."""


class PluginLoadError(Exception):
    """A registered implementation (``module:attr``) cannot be imported."""


def __getattr__(name: str) -> Any:
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
    global _registry
    if _registry is not None and not refresh:
        return _registry
    from torchx.plugins import cache

    registry = None if refresh else cache.load()
    if registry is None:
        from torchx.plugins.discovery import discover

        registry = discover()
        cache.store(registry)
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
    for part in attr.split(".") if attr else []:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginLoadError(f"{module_name!r} has no attribute {attr!r} (from {path!r})") from None
    return obj
