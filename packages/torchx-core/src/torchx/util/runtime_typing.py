"""Run-time stand-ins for the :mod:`typing` names that class statements on the start-up path use.

``import typing`` costs ~3 ms on top of what the CLI needs anyway (~5 ms with ``re``,
a sixth of the budget of ``import torchx.runner``). Modules on the start-up path give
type checkers the real names and use these at run time::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import Generic, TypeVar
    else:
        from torchx.util.runtime_typing import Generic, TypeVar

    T = TypeVar("T")

    class Box(Generic[T]): ...  # Box[int] is Box at run time
"""

from __future__ import annotations

import collections

#: ``Any`` for code that evaluates annotations at run time (``typing.get_type_hints`` of a record
#: class, e.g. by a serialization library): every value is an ``object``
Any = object


def TypeVar(name: str, *constraints: object, **options: object) -> str:
    """A placeholder for a type variable: its name."""
    return name


class Generic:
    """A base class whose subscripts (``Generic[T]``, ``Sub[int]``) are accepted and ignored."""

    __slots__ = ()

    def __class_getitem__(cls, params: object) -> type:
        return cls


class _NamedTupleMeta(type):
    """Turns ``class P(NamedTuple): x: int; y: int = 0`` into a :func:`collections.namedtuple`
    class with those fields, defaults, docstring and methods (what ``typing.NamedTuple`` does)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # the NamedTuple base itself
            return super().__new__(mcls, name, bases, namespace)
        fields = list(namespace.get("__annotations__", {}))  # type: ignore[call-overload]
        defaults = [namespace[f] for f in fields if f in namespace]
        module = str(namespace["__module__"])
        cls = collections.namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]
        for key, value in namespace.items():
            if key not in fields and key not in ("__annotations__", "__module__", "__qualname__", "__orig_bases__"):
                setattr(cls, key, value)
        cls.__qualname__ = str(namespace.get("__qualname__", name))
        return cls


class NamedTuple(metaclass=_NamedTupleMeta):
    """Base of typed named tuples (see :class:`_NamedTupleMeta`)."""
