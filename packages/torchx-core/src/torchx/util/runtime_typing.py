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
