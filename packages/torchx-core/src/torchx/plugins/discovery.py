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

from torchx.compat.legacy import LEGACY_GROUPS, legacy_record
from torchx.plugins import api_level, hookspecs
from torchx.plugins.import_errors import describe_error, import_failure_files
from torchx.plugins.registrations import EVENT_HOOKS, REGISTRATION_TYPES
from torchx.plugins.registry import GROUP, PluginInfo, Registry

logger: logging.Logger = logging.getLogger(__name__)


def new_plugin_manager() -> pluggy.PluginManager:
    """A pluggy manager with the torchx hookspecs."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    return pm


def _entry_points(legacy: bool = True) -> list[tuple[Any, str, str, list[str]]]:
    """(entry point, dist name, dist version, dist requirements) of every torchx-related entry
    point, sorted (without the legacy groups unless ``legacy``)."""
    from importlib.metadata import distributions

    found = []
    seen: set[tuple[str, str, str]] = set()
    groups = {GROUP, *LEGACY_GROUPS} if legacy else {GROUP}
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
            found.append((ep, name, dist.version or "?", dist.requires or []))
    found.sort(key=lambda item: (item[1].lower(), item[0].group, item[0].name))
    return found


def _load_plugin_module(pm: pluggy.PluginManager, info: PluginInfo, requires: list[str]) -> bool:
    """Imports the plugin's hook module and registers it, unless the plugin was written for a
    plugin API this core does not implement (then nothing of it is loaded: False)."""
    problem = api_level.requirement_problem(info.dist, requires)  # before importing anything
    if problem is None:
        try:
            module = importlib.import_module(info.value)
        except BaseException as e:
            if not isinstance(e, KeyboardInterrupt):
                info.watch = import_failure_files(info.value, e)
            raise
        info.watch = [getattr(module, "__file__", "") or ""]
        try:
            problem = api_level.level_problem(info.dist, api_level.declared_levels(module))
        except ValueError as e:
            info.errors.append(str(e))
            return False
    if problem is not None:
        info.incompatible = True
        info.errors.append(problem)
        return False
    pm.register(module, name=info.ident)
    pm.check_pending()
    return True


def _collect(pm: pluggy.PluginManager, info: PluginInfo, registry: Registry) -> None:
    for hook_name, rtype in REGISTRATION_TYPES.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            if impl.plugin_name != info.ident:
                continue
            try:
                records = list(impl.function() or ())
            except Exception as e:
                info.errors.append(f"{hook_name} raised {describe_error(e)}")
                continue
            for record in records:
                if not isinstance(record, rtype):
                    info.errors.append(f"{hook_name} yielded {type(record).__name__}, expected {rtype.__name__}")
                    continue
                registry.add(info, record)
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


def discover() -> Registry:
    """Loads every installed plugin's registrations: entry points (importing only the plugins'
    hook modules), then the ``torchx_plugins.*`` namespace packages (importing their modules),
    as ``TORCHX_PLUGINS_SOURCE`` selects (see :mod:`torchx.compat.namespace`)."""
    from torchx.compat.namespace import SOURCE_ENTRY_POINTS, SOURCE_NAMESPACE, discover_namespaces, plugin_sources

    sources = plugin_sources()
    registry = Registry()
    pm = new_plugin_manager()
    for ep, dist, version, requires in _entry_points(legacy=bool(sources & SOURCE_ENTRY_POINTS)):
        info = PluginInfo(name=ep.name, dist=dist, version=version, group=ep.group, value=ep.value)
        registry.plugins.append(info)
        if ep.group == GROUP:
            try:
                loaded = _load_plugin_module(pm, info, requires)
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                info.errors.append(f"cannot load module {ep.value!r}: {describe_error(e)}")
                continue
            if loaded:
                _collect(pm, info, registry)
        else:
            try:
                record = legacy_record(ep.group, ep.name, ep.value)
            except ValueError as e:
                info.errors.append(str(e))
                continue
            registry.add(info, record)
    if sources & SOURCE_NAMESPACE:
        # namespace modules may import upstream module paths (``torchx.schedulers.local_scheduler``)
        # when imported: the entry points, read above, resolve them
        import torchx.plugins

        torchx.plugins._partial = registry
        try:
            discover_namespaces(registry)
        finally:
            torchx.plugins._partial = None
    registry.finish()
    registry.plugin_manager = pm
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
