"""Finds what installed plugins register, from their distributions' metadata.

The native registrations are entry points of the group ``torchx``, one per record
(``scheduler.slurm = "torchx_sched_slurm.scheduler:create_scheduler  # Slurm via sbatch"``, see
:func:`torchx.plugins.registrations.from_entry_point`): reading them imports no plugin code. Then the compatibility
sources of :mod:`torchx.compat` add theirs to the same registry: upstream's entry-point groups (metadata too), the
group's hook modules (names without a dot) and the ``torchx_plugins.*`` namespace packages (these import plugin
modules, which may import any torchx module and look plugins up: they see what is registered so far).
:mod:`torchx.plugins.cache` keeps the result until the installed packages change.
"""

from __future__ import annotations

from typing import Any

from torchx.plugins import api_level
from torchx.plugins.registrations import API, HOOKS, from_entry_point, is_registration
from torchx.plugins.registry import GROUP, PluginInfo, Registry

#: (entry point, dist name, dist version, dist requirements)
EntryPoint = tuple[Any, str, str, list[str]]


def entry_points(groups: set[str]) -> list[EntryPoint]:
    """Every entry point of ``groups`` with its distribution, sorted by distribution name, group, name."""
    from importlib.metadata import distributions

    found = []
    seen: set[tuple[str, str, str]] = set()
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


def add_native(registry: Registry, eps: list[EntryPoint]) -> None:
    """Adds the registrations of every distribution (one :class:`PluginInfo` each)."""
    by_dist: dict[str, list[EntryPoint]] = {}
    for item in eps:
        if item[0].group == GROUP and is_registration(item[0].name):
            by_dist.setdefault(item[1], []).append(item)
    for dist, items in by_dist.items():
        info = PluginInfo(name="", dist=dist, version=items[0][2], group=GROUP, value="")
        registry.plugins.append(info)
        levels = [ep.value for ep, *_ in items if ep.name == API]
        problem = api_level.requirement_problem(dist, items[0][3])
        try:
            problem = problem or api_level.level_problem(dist, api_level.parse_levels(levels[0] if levels else None))
        except ValueError as e:
            problem = f"incompatible: {e}"
        if problem is not None:
            info.incompatible = True
            info.errors.append(problem)
            continue
        for ep, *_ in items:
            if ep.name.startswith(HOOKS + "."):
                info.hook_modules.append(ep.value.strip())
            elif ep.name != API:
                try:
                    registry.add(info, from_entry_point(ep.name, ep.value))
                except ValueError as e:
                    info.errors.append(str(e))


def discover(registry: Registry) -> None:
    """Fills ``registry`` from every source: native entry points, then :mod:`torchx.compat`'s."""
    from torchx.compat import hook_modules, legacy, namespace

    read = namespace.plugin_sources()
    groups = {GROUP, *(legacy.LEGACY_GROUPS if read & namespace.SOURCE_ENTRY_POINTS else ())}
    eps = entry_points(groups)
    add_native(registry, eps)
    legacy_components = legacy.add_legacy(registry, eps)
    hook_modules.add_hook_modules(registry, eps)
    if read & namespace.SOURCE_NAMESPACE:
        namespace.discover_namespaces(registry)
    legacy.replace_components(registry, legacy_components)
