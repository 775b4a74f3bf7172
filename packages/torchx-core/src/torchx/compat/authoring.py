"""Upstream TorchX's way of writing a plugin: a decorated function in a ``torchx_plugins``
namespace package (``from torchx.plugins import register``).

::

    # torchx_plugins/schedulers/my_scheduler.py  (no entry point needed)
    from torchx.plugins import register

    @register.scheduler()
    def my_scheduler(session_name: str, **kwargs) -> Scheduler: ...

    # torchx_plugins/named_resources/my_hosts.py
    from torchx.plugins import WHOLE, powers_of_two_gpus, register

    @register.named_resource(aliases=["big"], fractionals=powers_of_two_gpus)
    def my_gpu(fractional: float = WHOLE) -> Resource:
        return Resource(cpu=int(64 * fractional), gpu=int(8 * fractional), memMB=int(512 * 1024 * fractional))
    # registers my_gpu, big, my_gpu_8, my_gpu_4, my_gpu_2, my_gpu_1

The decorator only marks the function (``_plugin_type``, ``_plugin_name``);
:mod:`torchx.compat.namespace` finds marked functions when it scans the namespace packages.
Importing this module imports nothing beyond :mod:`enum`.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from typing import Any, TypeVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.roles import Resource

F = TypeVar("F", bound=Callable[..., object])

#: name of the per-module dict a named-resource module gets: name -> factory (as in upstream)
NAMED_RESOURCES_ATTR = "NAMED_RESOURCES"

WHOLE: float = 1.0
"""A whole host (every CPU, GPU and byte of memory)."""
HALF: float = 0.5
"""Half a host."""
QUARTER: float = 0.25
"""A quarter of a host."""
EIGHTH: float = 0.125
"""An eighth of a host."""
SIXTEENTH: float = 0.0625
"""A sixteenth of a host."""


class PluginType(str, enum.Enum):
    """What a registered function provides; the value is the entry-point group of that kind."""

    SCHEDULER = "torchx.schedulers"
    NAMED_RESOURCE = "torchx.named_resources"
    TRACKER = "torchx.tracker"

    @property
    def namespace(self) -> str:
        """The namespace package scanned for this kind (``torchx_plugins.schedulers`` ...)."""
        return "torchx_plugins." + self.value.removeprefix("torchx.")


class resource_tags:
    """Keys of ``Resource.tags`` set on every resource a :meth:`register.named_resource` factory
    returns (read them with ``Resource.get_resource_name()`` and ``Resource.is_fractional()``)."""

    RESOURCE_NAME: str = "torchx/named_resources.name"
    """The name the resource was looked up by (a fractional's generated name, an alias's base name)."""

    IS_FRACTIONAL: str = "torchx/named_resources.is_fractional"
    """True for a slice smaller than the whole host."""


Fractionals = Callable[[Any], dict[float, str]]


def powers_of_two_gpus(resource: Resource) -> dict[float, str]:
    """Fractions for every power-of-two GPU count of ``resource``: 8 GPUs give
    ``{1.0: "8", 0.5: "4", 0.25: "2", 0.125: "1"}``.

    Raises:
        ValueError: ``resource.gpu`` is not a positive power of two
    """
    gpus = resource.gpu
    if gpus <= 0 or gpus & (gpus - 1):
        raise ValueError(f"powers_of_two_gpus needs a resource whose gpu is a power of two > 0, got gpu={gpus}")
    out: dict[float, str] = {}
    fraction = WHOLE
    while int(gpus * fraction) >= 1:
        out[fraction] = str(int(gpus * fraction))
        fraction /= 2
    return out


def halve_mem_down_to(*, minGiB: int) -> Fractionals:
    """Fractions that halve the memory of the resource, from all of it down to ``minGiB``
    (64 GiB with ``minGiB=8`` gives ``{1.0: "64", 0.5: "32", 0.25: "16", 0.125: "8"}``).

    The returned function raises ``ValueError`` when the memory is not a positive whole number of
    GiB, or when ``minGiB`` is below its odd part (halving further would leave whole GiB).
    """

    def fractions(resource: Resource) -> dict[float, str]:
        mem_mb = resource.memMB
        if mem_mb <= 0 or mem_mb % 1024:
            raise ValueError(f"halve_mem_down_to needs a memMB that is a positive multiple of 1024, got {mem_mb}")
        gib = mem_mb // 1024
        odd = gib
        while odd % 2 == 0:
            odd //= 2
        if minGiB < odd:
            raise ValueError(
                f"halve_mem_down_to(minGiB={minGiB}): {gib} GiB cannot be halved below {odd} GiB"
                f" in whole GiB; use minGiB >= {odd}"
            )
        out: dict[float, str] = {}
        fraction = WHOLE
        while int(gib * fraction) >= minGiB:
            out[fraction] = str(int(gib * fraction))
            fraction /= 2
        return out

    return fractions


def _mark(fn: Any, plugin_type: PluginType, name: str) -> None:
    fn._plugin_type = plugin_type
    fn._plugin_name = name


class register:
    """Marks a function as a plugin of ``type`` named ``name`` (default: the function's name).

    Use the class methods: ``@register.scheduler()``, ``@register.tracker()``,
    ``@register.named_resource(...)``. The function is returned unchanged (tagged).
    """

    def __init__(self, type: PluginType, name: str | None = None) -> None:
        self._type = type
        self._name = name

    def __call__(self, fn: F) -> F:
        _mark(fn, self._type, self._name or fn.__name__)  # type: ignore[attr-defined]
        return fn

    @classmethod
    def scheduler(cls, name: str | None = None) -> register:
        """Registers ``fn(session_name: str, **kwargs) -> Scheduler``."""
        return cls(PluginType.SCHEDULER, name)

    @classmethod
    def tracker(cls, name: str | None = None) -> register:
        """Registers ``fn(config: str | None) -> TrackerBase``."""
        return cls(PluginType.TRACKER, name)

    @classmethod
    def named_resource(
        cls,
        name: str | None = None,
        aliases: list[str] | None = None,
        fractionals: Fractionals | dict[float, str] | None = None,
    ) -> register:
        """Registers a ``Resource`` factory, its ``aliases`` and its fractional slices.

        With ``fractionals`` (a dict ``{fraction: suffix}`` or a function of the whole-host
        resource returning one, e.g. :func:`powers_of_two_gpus`), the function must take the
        fraction as its first argument; the whole resource is built once, at decoration, to name
        the slices ``<name>_<suffix>``. Every name is also set on the module (so
        ``from mod import my_gpu_4`` works) and listed in the module's ``NAMED_RESOURCES`` dict.

        Raises (at decoration):
            ValueError: a name is registered twice in the module
            AttributeError: a generated name is already a module attribute
        """
        return _NamedResourceRegister(name, aliases or [], fractionals)


class _NamedResourceRegister(register):
    def __init__(self, name: str | None, aliases: list[str], fractionals: Fractionals | dict[float, str] | None):
        super().__init__(PluginType.NAMED_RESOURCE, name)
        self._aliases = aliases
        self._fractionals = fractionals

    def __call__(self, fn: F) -> F:
        module = sys.modules[fn.__module__]
        base = self._name or fn.__name__
        table: dict[str, Callable[..., Any]] = module.__dict__.setdefault(NAMED_RESOURCES_ATTR, {})

        def add(name: str, factory: Callable[..., Any], as_attribute: bool) -> None:
            if name in table:
                raise ValueError(f"named resource {name!r} is registered twice in {module.__name__}")
            factory.__module__ = fn.__module__
            factory.__qualname__ = name
            factory.__name__ = name
            _mark(factory, PluginType.NAMED_RESOURCE, name)
            table[name] = factory
            if as_attribute:
                if hasattr(module, name):
                    raise AttributeError(f"{module.__name__} already has an attribute {name!r}")
                setattr(module, name, factory)

        def tagged(*args: Any, **kwargs: Any) -> Any:
            return _tag(fn(*args, **kwargs), base, False)

        add(base, tagged, as_attribute=base != fn.__name__)
        for alias in self._aliases:
            add(alias, _child(lambda: tagged(), base, alias=True), as_attribute=True)
        if self._fractionals is not None:
            fractions = self._fractionals
            table_of = fractions if isinstance(fractions, dict) else fractions(fn())
            for fraction, suffix in table_of.items():
                sliced = f"{base}_{suffix}"
                add(sliced, _child(_slice(fn, fraction, sliced), base, alias=False), as_attribute=True)
        return tagged  # type: ignore[return-value]


def _tag(resource: Any, name: str, fractional: bool) -> Any:
    resource.tags[resource_tags.RESOURCE_NAME] = name
    resource.tags[resource_tags.IS_FRACTIONAL] = fractional
    return resource


def _slice(fn: Callable[..., Any], fraction: float, name: str) -> Callable[[], Any]:
    def factory() -> Any:
        return _tag(fn(fraction), name, fraction != WHOLE)

    return factory


def _child(factory: Callable[[], Any], base: str, alias: bool) -> Callable[[], Any]:
    """``factory`` marked as an alias or a slice of the named resource ``base``."""

    def child() -> Any:
        return factory()

    child._plugin_base_name = base  # type: ignore[attr-defined]
    child._plugin_is_alias = alias  # type: ignore[attr-defined]
    return child
