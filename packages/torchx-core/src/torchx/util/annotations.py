"""Reading annotations the way :func:`typing.get_type_hints` does, without importing :mod:`typing`
(it is not on the CLI's start-up path; code that uses ``typing.Optional`` has imported it, so
its ``Union`` is found in :data:`sys.modules`)."""

from __future__ import annotations

import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def type_hints(obj: Any) -> dict[str, Any]:
    """Name -> annotation of a function's parameters or a class's attributes (its bases' first),
    strings (``from __future__ import annotations``) evaluated in the defining module; an
    annotation that does not evaluate is left out."""
    if isinstance(obj, type):
        scopes = [
            (klass.__dict__.get("__annotations__", {}), vars(sys.modules.get(klass.__module__, types)))  # noqa: RUF063
            for klass in reversed(obj.__mro__)
        ]
    else:
        scopes = [(getattr(obj, "__annotations__", {}), getattr(obj, "__globals__", {}))]
    hints: dict[str, Any] = {}
    for declared, namespace in scopes:
        for name, annotation in declared.items():
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, namespace)  # the defining module's own annotation text
                except Exception:
                    continue
            hints[name] = annotation
    return hints


def is_union(tp: Any) -> bool:
    """True for ``A | B`` and ``typing.Union[A, B]`` / ``Optional[A]``."""
    if isinstance(tp, types.UnionType):
        return True
    typing = sys.modules.get("typing")
    return typing is not None and getattr(tp, "__origin__", None) is typing.Union


def union_members(tp: Any) -> tuple[list[Any], bool]:
    """(the members other than None, whether None is one) of a union; ``([tp], False)`` otherwise."""
    if not is_union(tp):
        return [tp], False
    members = [a for a in tp.__args__ if a is not type(None)]
    return members, len(members) < len(tp.__args__)


def without_none(tp: Any) -> tuple[Any, bool]:
    """``(T, True)`` for ``T | None`` / ``Optional[T]``; ``(tp, False)`` for anything else."""
    members, optional = union_members(tp)
    return (members[0], True) if optional and len(members) == 1 else (tp, False)
