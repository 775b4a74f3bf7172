"""Finds installed plugins through entry points and asks them what they register.

This is the slow path (it imports ``importlib.metadata``, pluggy and each plugin's small
hook module); :mod:`torchx.plugins.cache` keeps its result until the installed packages
change. A plugin that fails to import, or whose hook raises or yields something that is
not a record, is recorded in its :class:`PluginInfo` and skipped; the rest still load.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

import pluggy

from torchx.plugins import hookspecs
from torchx.plugins.legacy import LEGACY_GROUPS, legacy_record
from torchx.plugins.registrations import EVENT_HOOKS, REGISTRATION_TYPES
from torchx.plugins.registry import GROUP, Conflict, PluginInfo, Registry

logger: logging.Logger = logging.getLogger(__name__)

#: ranks of record sources in a name clash (higher wins)
LEVEL_PLUGIN = 1
LEVEL_LEGACY = 2


def _describe_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def new_plugin_manager() -> pluggy.PluginManager:
    """A pluggy manager with the torchx hookspecs."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    return pm


def _entry_points() -> list[tuple[Any, str, str]]:
    """(entry point, dist name, dist version) of every torchx-related entry point, sorted."""
    from importlib.metadata import distributions

    found = []
    seen: set[tuple[str, str, str]] = set()
    groups = {GROUP, *LEGACY_GROUPS}
    for dist in distributions():
        try:
            eps = [ep for ep in dist.entry_points if ep.group in groups]
        except Exception:  # a broken dist-info must not stop discovery
            continue
        if not eps:
            continue
        name = dist.metadata["Name"] or "?"
        for ep in eps:
            key = (ep.group, ep.name, ep.value)
            if key in seen:  # the same dist found twice on sys.path
                continue
            seen.add(key)
            found.append((ep, name, dist.version or "?"))
    found.sort(key=lambda item: (item[1].lower(), item[0].group, item[0].name))
    return found


def _load_plugin_module(pm: pluggy.PluginManager, info: PluginInfo) -> Any:
    module = importlib.import_module(info.value)
    info.module_file = getattr(module, "__file__", "") or ""
    pm.register(module, name=info.ident)
    pm.check_pending()
    return module


def _collect(pm: pluggy.PluginManager, info: PluginInfo, registry: Registry, levels: dict[str, int]) -> None:
    for hook_name, rtype in REGISTRATION_TYPES.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            if impl.plugin_name != info.ident:
                continue
            try:
                records = list(impl.function() or ())
            except Exception as e:
                info.errors.append(f"{hook_name} raised {_describe_error(e)}")
                continue
            for record in records:
                if not isinstance(record, rtype):
                    info.errors.append(f"{hook_name} yielded {type(record).__name__}, expected {rtype.__name__}")
                    continue
                registry.add(info, record, LEVEL_PLUGIN, levels)
    for hook_name in EVENT_HOOKS:
        impls = [i for i in getattr(pm.hook, hook_name).get_hookimpls() if i.plugin_name == info.ident]
        if not impls:
            continue
        if any(i.hookwrapper or getattr(i, "wrapper", False) for i in impls):
            info.errors.append(
                f"{hook_name} is declared as a wrapper (hookwrapper/wrapper=True); torchx calls event hooks"
                " one after another: declare it with a plain @hookimpl"
            )
            continue
        info.event_hooks.append(hook_name)


def _add_legacy_components(registry: Registry, entries: list[tuple[PluginInfo, Any]]) -> None:
    """Applies the ``torchx.components`` entry points the way upstream TorchX does (see
    :mod:`torchx.plugins.legacy`): when there is any, the builtin components are no longer
    listed unless an entry names their package; each entry is a prefixed source of its own."""
    if not entries:
        return
    builtin = registry.legacy_target("torchx.components")
    if builtin is not None:
        for source in [c for c in registry.components if c.module == builtin]:
            registry.components.remove(source)
            owner = registry.origin.get(("components", source.prefix + "|" + source.module), "?")
            registry.conflicts.append(
                Conflict("components", builtin, entries[0][0].ident, owner, "torchx.components entry points", builtin)
            )
    plugin_sources = registry.components
    registry.components = []
    for info, record in entries:
        module = registry.legacy_target(record.module) or record.module
        registry.add(info, type(record)(record.prefix, module), LEVEL_LEGACY, {})
    registry.components += [c for c in plugin_sources if c not in registry.components]


def discover() -> Registry:
    """Loads every installed plugin's registrations (imports only the plugins' hook modules)."""
    registry = Registry()
    levels: dict[str, int] = {}
    legacy_components: list[tuple[PluginInfo, Any]] = []
    pm = new_plugin_manager()
    for ep, dist, version in _entry_points():
        info = PluginInfo(name=ep.name, dist=dist, version=version, group=ep.group, value=ep.value)
        registry.plugins.append(info)
        if ep.group == GROUP:
            levels[info.ident] = LEVEL_PLUGIN
            try:
                _load_plugin_module(pm, info)
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                info.errors.append(f"cannot load module {ep.value!r}: {_describe_error(e)}")
                continue
            _collect(pm, info, registry, levels)
        else:
            levels[info.ident] = LEVEL_LEGACY
            try:
                record = legacy_record(ep.group, ep.name, ep.value)
            except ValueError as e:
                info.errors.append(str(e))
                continue
            if ep.group == "torchx.components":
                legacy_components.append((info, record))
                continue
            registry.add(info, record, LEVEL_LEGACY, levels)
    _add_legacy_components(registry, legacy_components)
    for conflict in registry.conflicts:
        logger.debug(
            "%s %r registered by %s and %s; using %s",
            conflict.kind,
            conflict.name,
            conflict.winner,
            conflict.loser,
            conflict.winner,
        )
    return registry
