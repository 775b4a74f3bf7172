"""Run-time stand-ins for the :mod:`typing` names that class statements on the start-up path use.

``import typing`` (with ``re``, which it imports) costs ~5 ms, a sixth of the budget of
``import torchx.runner``. Modules on that path give type checkers the real names and use
these at run time::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import Generic, TypeVar
    else:
        from torchx.util.runtime_typing import Generic, TypeVar

    T = TypeVar("T")

    class Box(Generic[T]): ...  # Box[int] is Box at run time
"""

from __future__ import annotations


def TypeVar(name: str, *constraints: object, **options: object) -> str:
    """A placeholder for a type variable: its name."""
    return name


class Generic:
    """A base class whose subscripts (``Generic[T]``, ``Sub[int]``) are accepted and ignored."""

    __slots__ = ()

    def __class_getitem__(cls, params: object) -> type:
        return cls
