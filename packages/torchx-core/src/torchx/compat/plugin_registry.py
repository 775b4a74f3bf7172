"""Upstream TorchX's registry API (``torchx.plugins.registry()``), a view of torchx's one
:class:`~torchx.plugins.registry.Registry`::

    from torchx import plugins

    reg = plugins.registry()
    schedulers = reg.get(plugins.PluginType.SCHEDULER)   # name -> factory
    for error in reg.load_errors():                      # RegistrationError(module, error, name, plugin_type)
        print(error)
    print(reg)                                           # YAML report

The factories returned are imported when first called, so looking at the registry imports no
backend. Everything torchx finds is in it: the group ``torchx`` (registrations, hook modules), the legacy entry-point
groups and the ``torchx_plugins.*`` namespace packages, clashes resolved by the one rule of
:mod:`torchx.plugins.registry`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from torchx.compat.authoring import PluginType
from torchx.compat.namespace import KIND_OF, NAMESPACE_GROUPS, plugin_sources
from torchx.plugins.registrations import Ref
from torchx.plugins.registry import Registry

#: registry kind -> the plugin type it is
_TYPE_OF_KIND: dict[str, PluginType] = {kind: ptype for ptype, (kind, _) in KIND_OF.items()}


@dataclass(frozen=True)
class RegistrationError:
    """Something that went wrong finding a plugin.

    Attributes:
        module: the module (or entry point value) concerned
        error: what went wrong
        name: the plugin name, for errors about one plugin (a clash, a wrong kind)
        plugin_type: ``"scheduler"``, ``"named_resource"`` or ``"tracker"`` when known
    """

    module: str
    error: str
    name: str | None = None
    plugin_type: str | None = None


def _type_of_group(group: str) -> PluginType | None:
    kind = NAMESPACE_GROUPS.get(group)
    if kind is not None:
        return _TYPE_OF_KIND[kind]
    for ptype in PluginType:
        if group == ptype.value:
            return ptype
    return None


class PluginRegistry:
    """Schedulers, named resources and trackers installed plugins register (``torchx.plugins.registry()``)."""

    def __init__(self, registry: Registry | None = None) -> None:
        self._registry = registry
        self._asked: set[PluginType] = set()

    def _reg(self) -> Registry:
        """The given registry, else the process's current one (``torchx.plugins.get_registry()``)."""
        if self._registry is not None:
            return self._registry
        from torchx.plugins import get_registry

        return get_registry()

    def get(self, plugin_type: PluginType) -> dict[str, Any]:
        """Name -> factory of every plugin of ``plugin_type`` (empty dict if none), each a
        :class:`~torchx.plugins.Ref` that imports the factory on its first call."""
        self._asked.add(plugin_type)
        kind = KIND_OF[plugin_type][0]
        return {name: Ref(record.factory) for name, record in getattr(self._reg(), kind).items()}

    def info(self, plugin_type: PluginType | None = None) -> Any:
        """:meth:`get` of ``plugin_type``, or of every type (``{PluginType: {name: factory}}``)."""
        if plugin_type is not None:
            return self.get(plugin_type)
        return {ptype: self.get(ptype) for ptype in PluginType}

    def clear(self) -> None:
        """Forgets what was discovered; the next use (and the next :func:`registry`) looks again."""
        from torchx.plugins import reset

        self._asked.clear()
        reset()
        registry.cache_clear()

    def _all_errors(self) -> list[RegistrationError]:
        reg = self._reg()
        out: list[RegistrationError] = []
        for plugin in reg.plugins:
            ptype = _type_of_group(plugin.group)
            module = plugin.name if plugin.group in NAMESPACE_GROUPS else plugin.value
            for error in plugin.errors:
                out.append(RegistrationError(module, error, None, ptype.name.lower() if ptype else None))
        for c in reg.conflicts:
            ctype = _TYPE_OF_KIND.get(c.kind)
            if ctype is None:
                continue
            out.append(
                RegistrationError(
                    c.loser_value.partition(":")[0],
                    f"{c.kind[:-1].replace('_', ' ')} {c.name!r} is also registered by {c.winner}, which wins;"
                    " remove one of the registrations",
                    c.name,
                    ctype.name.lower(),
                )
            )
        return out

    @property
    def errors(self) -> list[RegistrationError]:
        """The errors of the plugin types already asked for with :meth:`get` (nothing is discovered here)."""
        names = {t.name.lower() for t in self._asked}
        return [e for e in self._all_errors() if e.plugin_type is None or e.plugin_type in names] if names else []

    def load_errors(self, plugin_type: PluginType | None = None) -> list[RegistrationError]:
        """Every error found discovering ``plugin_type`` (every type when None): modules that fail
        to import, plugins of the wrong kind for their namespace, name clashes."""
        for ptype in [plugin_type] if plugin_type else list(PluginType):
            self._asked.add(ptype)
        errors = self._all_errors()
        if plugin_type is None:
            return errors
        return [e for e in errors if e.plugin_type == plugin_type.name.lower()]

    def to_dict(self) -> dict[str, Any]:
        """Plain data: per plugin type, ``[{name, module, aliases?, fractionals?}]``, and ``errors``."""
        data: dict[str, Any] = {}
        for ptype in PluginType:
            records = getattr(self._reg(), KIND_OF[ptype][0])
            data[ptype.name.lower()] = [
                {"name": name, "module": record.factory.partition(":")[0]} for name, record in records.items()
            ]
        data["errors"] = [
            {k: v for k, v in vars(e).items() if v is not None} for e in self.load_errors() if e.name is None
        ]
        return data

    def __str__(self) -> str:
        from torchx.util.yaml import dump

        return dump(self.to_dict()).rstrip("\n")


@functools.lru_cache(maxsize=1)
def registry() -> PluginRegistry:
    """Upstream TorchX's plugin registry view (one per process; ``registry().clear()`` starts
    over). Reached as ``torchx.plugins.registry()``.

    ``TORCHX_PLUGINS_SOURCE`` selects what is read: ``0`` nothing but torchx's own backends (the
    group ``torchx``), ``1`` namespace packages, ``2`` entry points, ``3`` (default) both.

    Raises:
        ValueError: ``TORCHX_PLUGINS_SOURCE`` holds another value
    """
    plugin_sources(strict=True)
    return PluginRegistry()
