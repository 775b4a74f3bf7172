# mypy: disable-error-code="empty-body"
"""Hook modules of the entry-point group ``torchx``: the earlier way to register a torchx plugin.

A distribution names one module of pluggy hook implementations, under a name without a dot
(``[project.entry-points.torchx] slurm = "torchx_sched_slurm.plugin"``), whose registration
hooks yield records::

    from torchx.plugins import SchedulerPlugin, hookimpl

    @hookimpl
    def torchx_schedulers():
        yield SchedulerPlugin("slurm", "torchx_sched_slurm.scheduler:create_scheduler", "Slurm via sbatch")

Discovery imports the module (it may import any torchx module and look plugins up: it sees
what the entry points registered), calls its registration hooks (``torchx_<kind>`` for each
kind of :data:`torchx.plugins.registrations.KINDS`, each yielding that kind's records) and keeps
its event hooks for :mod:`torchx.plugins.events`. A module that fails to import, a hook that
raises or yields something else than its kind's record is recorded and skipped; the cache
watches the files such a module went through. ``TORCHX_PLUGIN_API = (lowest, highest)`` in the
module declares its plugin API levels. The native way is the same group's registrations,
``<kind>.<name> = "module:attr"`` (:mod:`torchx.plugins.discovery`), which import nothing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from typing import Any

import pluggy

import torchx.plugins.api_level as api_level
import torchx.plugins.hookspecs as hookspecs
from torchx.compat.import_errors import describe_error, import_failure_files
from torchx.plugins.registrations import EVENT_HOOKS, KINDS, is_registration
from torchx.plugins.registry import GROUP, PluginInfo, Registry

#: the hook-module attribute a plugin declares its plugin API levels in
DECLARATION = "TORCHX_PLUGIN_API"

_spec = pluggy.HookspecMarker("torchx")


# the registration hookspecs: each ``torchx_<kind>()`` yields records of that kind


@_spec
def torchx_schedulers() -> Iterable[Any]:
    """``SchedulerPlugin`` records."""


@_spec
def torchx_named_resources() -> Iterable[Any]:
    """``NamedResourcePlugin`` records."""


@_spec
def torchx_components() -> Iterable[Any]:
    """``ComponentSource`` records."""


@_spec
def torchx_trackers() -> Iterable[Any]:
    """``TrackerPlugin`` records."""


@_spec
def torchx_workspaces() -> Iterable[Any]:
    """``WorkspacePlugin`` records."""


@_spec
def torchx_cli_commands() -> Iterable[Any]:
    """``CliCommand`` records."""


@_spec
def torchx_legacy_modules() -> Iterable[Any]:
    """``LegacyModule`` records (upstream module paths)."""


def _load(pm: pluggy.PluginManager, info: PluginInfo, requires: list[str]) -> bool:
    """Imports the hook module and registers it, unless it was written for a plugin API this
    core does not implement (then nothing of it is loaded: False)."""
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
            levels = api_level.parse_levels(getattr(module, DECLARATION, None))
        except ValueError as e:
            info.errors.append(str(e))
            return False
        problem = api_level.level_problem(info.dist, levels)
    if problem is not None:
        info.incompatible = True
        info.errors.append(problem)
        return False
    pm.register(module, name=info.ident)
    pm.check_pending()
    return True


def _collect(pm: pluggy.PluginManager, info: PluginInfo, registry: Registry) -> None:
    for kind in KINDS.values():
        for impl in getattr(pm.hook, kind.hook).get_hookimpls():
            if impl.plugin_name != info.ident:
                continue
            try:
                records = list(impl.function() or ())
            except Exception as e:
                info.errors.append(f"{kind.hook} raised {describe_error(e)}")
                continue
            for record in records:
                if not isinstance(record, kind.rtype):
                    info.errors.append(f"{kind.hook} yielded {type(record).__name__}, expected {kind.rtype.__name__}")
                    continue
                registry.add(info, record)
    for hook_name in EVENT_HOOKS:
        impls = [i for i in getattr(pm.hook, hook_name).get_hookimpls() if i.plugin_name == info.ident]
        if any(i.hookwrapper or getattr(i, "wrapper", False) for i in impls):
            info.errors.append(
                f"{hook_name} is declared as a wrapper (hookwrapper/wrapper=True); torchx calls event hooks"
                " one after another: declare it with a plain @hookimpl"
            )
        elif impls:
            info.event_hooks.append(hook_name)
    if info.event_hooks:
        info.hook_modules.append(info.value)


def add_hook_modules(registry: Registry, eps: list[tuple[Any, str, str, list[str]]]) -> None:
    """Imports every hook module of the group ``torchx`` and adds what its hooks register."""
    eps = [item for item in eps if item[0].group == GROUP and not is_registration(item[0].name)]
    if not eps:
        return
    pm = registry.plugin_manager = registry.plugin_manager or hookspecs.new_plugin_manager()
    pm.add_hookspecs(sys.modules[__name__])
    for ep, dist, version, requires in eps:
        info = PluginInfo(name=ep.name, dist=dist, version=version, group=GROUP, value=ep.value)
        registry.plugins.append(info)
        if ":" in ep.value:  # a registration missing its kind (``scheduler = "mod:attr"``)
            info.errors.append(
                f"entry point {ep.name} = {ep.value!r} of group torchx: a name without a dot names a hook module"
                ' (a module); a registration is named <kind>.<name> = "module:attr"'
            )
            continue
        try:
            loaded = _load(pm, info, requires)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            info.errors.append(f"cannot load module {ep.value!r}: {describe_error(e)}")
            continue
        if loaded:
            _collect(pm, info, registry)
