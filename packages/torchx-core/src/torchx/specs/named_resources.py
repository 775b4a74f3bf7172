"""Named resources: look up a :class:`Resource` by name (``resource(h="gpu.small")``).

Sources, later ones winning a clash: the generic sizes (``gpu.*``, ``cpu.*``), the AWS
instance types (``aws_*``), then plugins (``named_resource.<name>`` entry points of the group
``torchx`` and every compatible source: see :mod:`torchx.plugins`). Factories are called only when looked up.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable, Iterator, Mapping

from torchx.specs.roles import NULL_RESOURCE, Resource
from torchx.util.suggest import did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.plugins.registry import Registry


class _Factories(dict):  # type: ignore[type-arg]
    """name -> zero-argument factory; fills itself from the builtin tables and plugins on first use.

    Entries set by hand (``_named_resource_factories["x"] = fn``) win over discovered ones.
    """

    _loaded = False
    _discovered: frozenset[str] | set[str] = frozenset()
    #: the thread filling the table, while it does
    _filler: int | None = None

    def load(self) -> None:
        if self._loaded:
            return
        registry = _plugin_registry()  # first: a thread waiting for discovery holds no lock of ours
        with _filling:  # another thread's lookup waits until the table is full
            if self._loaded or self._filler == _thread.get_ident():
                return  # full; or this thread is filling it (a factory module looked a resource up)
            self._filler = _thread.get_ident()
            try:
                self._fill(registry)
            finally:
                self._filler = None
            # a lookup by a plugin module that discovery imports sees the plugins found so far
            self._loaded = registry is None or registry.complete

    def _fill(self, registry: Registry | None) -> None:
        self._discovered = set()
        from torchx.specs import named_resources_aws, named_resources_generic

        discovered: dict[str, Callable[[], Resource]] = {
            "NULL": lambda: NULL_RESOURCE,
            "MISSING": lambda: NULL_RESOURCE,
        }
        discovered.update(named_resources_generic.NAMED_RESOURCES)
        discovered.update(named_resources_aws.NAMED_RESOURCES)
        if registry is not None:
            from torchx.plugins import Ref

            for name, record in registry.named_resources.items():
                discovered[name] = Ref(record.factory)
        for name, factory in discovered.items():
            if name not in self:
                self[name] = factory
                self._discovered.add(name)  # type: ignore[union-attr]

    def forget_discovered(self) -> None:
        """Drops what :meth:`load` added (entries set by hand stay); the next lookup loads again."""
        for name in self._discovered:
            self.pop(name, None)
        self._discovered = frozenset()
        self._loaded = False


def _plugin_registry() -> Registry | None:
    """The plugin registry, or None when discovery failed (logged: it must never break resource lookup)."""
    try:
        from torchx.plugins import get_registry

        return get_registry()
    except Exception as e:
        import logging

        logging.getLogger(__name__).warning("could not load named resources from plugins: %s", e)
        return None


#: held while the table is filled (re-entrant: the filling thread's own lookups go through)
_filling = _thread.RLock()
#: name -> factory of every known named resource (filled on first lookup)
_named_resource_factories: _Factories = _Factories()


class UnknownNamedResourceError(KeyError, ValueError):
    """No named resource has that name (a ``KeyError`` for lookups, a ``ValueError`` for arguments)."""

    def __str__(self) -> str:
        return str(self.args[0])


def get_named_resources(res: str) -> Resource:
    """The :class:`Resource` called ``res``.

    Raises:
        UnknownNamedResourceError: no such named resource (the message suggests close names)
    """
    factory = _named_resource_factories.get(res)
    if factory is None:
        _named_resource_factories.load()
        factory = _named_resource_factories.get(res)
    if factory is None:
        raise UnknownNamedResourceError(
            f"unknown named resource {res!r}.{did_you_mean(res, _named_resource_factories)}"
            " `torchx plugins` lists installed ones; e.g. gpu.small, cpu.medium, aws_p3.2xlarge"
        )
    resource = factory()
    if not isinstance(resource, Resource):
        raise TypeError(f"named resource {res!r}: factory returned {type(resource).__name__}, not Resource")
    return resource


class _NamedResources(Mapping[str, Resource]):
    """Read-only mapping view: ``named_resources["gpu.small"]``; iterating lists every name."""

    def __getitem__(self, name: str) -> Resource:
        return get_named_resources(name)

    def __iter__(self) -> Iterator[str]:
        _named_resource_factories.load()
        return iter(sorted(_named_resource_factories))

    def __len__(self) -> int:
        _named_resource_factories.load()
        return len(_named_resource_factories)

    def __contains__(self, name: object) -> bool:
        _named_resource_factories.load()
        return name in _named_resource_factories


named_resources: _NamedResources = _NamedResources()


def resource(
    cpu: int | None = None, gpu: int | None = None, memMB: int | None = None, h: str | None = None
) -> Resource:
    """A :class:`Resource`: the named resource ``h`` if given, else from the numbers.

    Unset numbers default to 2 CPUs, 0 GPUs, 1024 MB.

    Args:
        cpu: logical CPUs
        gpu: GPUs
        memMB: memory in MB
        h: a named resource (wins over the numbers)
    """
    if h:
        return get_named_resources(h)
    return Resource(
        cpu=2 if cpu is None else cpu, gpu=0 if gpu is None else gpu, memMB=1024 if memMB is None else memMB
    )
