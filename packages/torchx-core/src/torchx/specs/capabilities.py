"""Typed keys into :attr:`Resource.capabilities <torchx.specs.Resource.capabilities>`.

A :class:`CapabilityKey` names a capability once (``namespace.name``) and checks the type
of what is read back; the value is stored under the plain string key, so code that reads
``capabilities`` directly sees the same thing::

    EFA = CapabilityKey("aws", "efa_enabled", bool)
    EFA.set(resource, True)      # resource.capabilities == {"aws.efa_enabled": True}
    EFA.get(resource)            # True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar, overload

from torchx.specs.roles import Resource

V = TypeVar("V")


@dataclass(frozen=True)
class CapabilityKey(Generic[V]):
    """The capability ``<namespace>.<name>`` whose values are of ``type``.

    Args:
        namespace: who interprets it (a scheduler, a cloud)
        name: the capability within the namespace
        type: the type :meth:`get` insists on (``bool`` is not accepted for ``int``)
    """

    namespace: str
    name: str
    type: type[V]

    @property
    def key(self) -> str:
        """The string key in ``Resource.capabilities``."""
        return f"{self.namespace}.{self.name}"

    def set(self, resource: Resource, value: V) -> None:
        """Stores ``value`` in ``resource.capabilities``."""
        resource.capabilities[self.key] = value

    @overload
    def get(self, resource: Resource) -> V | None: ...

    @overload
    def get(self, resource: Resource, default: V) -> V: ...

    def get(self, resource: Resource, default: V | None = None) -> V | None:
        """The stored value, or ``default`` when there is none.

        Raises:
            TypeError: the stored value is not a ``type``
        """
        if self.key not in resource.capabilities:
            return default
        value = resource.capabilities[self.key]
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise TypeError(f"capability {self.key!r} should be a {self.type.__name__}, got {value!r}")
        return value
