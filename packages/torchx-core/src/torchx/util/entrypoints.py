"""Upstream TorchX's ``torchx.util.entrypoints``: loading entry points by group and name.

torchx itself reads entry points through its plugin registry (:mod:`torchx.plugins`); these
helpers are for code written for TorchX that loads its own.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from importlib.metadata import EntryPoint
    from typing import Any

__all__ = ["load", "load_group"]


def _group(group: str) -> list[EntryPoint]:
    from importlib.metadata import entry_points

    return sorted(entry_points(group=group), key=lambda ep: ep.name)


def load(group: str, name: str, default: Any = None) -> Any:
    """The object entry point ``name`` of ``group`` names, loaded; ``default`` if there is none.

    Raises:
        KeyError: no such entry point and no ``default``
    """
    for ep in _group(group):
        if ep.name == name:
            return ep.load()
    if default is None:
        raise KeyError(f"no entry point {name!r} in group {group!r}")
    return default


def _deferred(ep: EntryPoint) -> Callable[..., Any]:
    def run(*args: object, **kwargs: object) -> Any:
        obj = ep.load()
        return obj(*args, **kwargs) if callable(obj) and ":" in ep.value else obj

    return run


def load_group(group: str, default: dict[str, Any] | None = None, skip_defaults: bool = False) -> dict[str, Any] | None:
    """Name -> deferred loader of every entry point in ``group``: calling it loads the entry point
    and calls what it names with the arguments given (a module-valued entry point returns the
    module). As upstream: when the group has entry points, ``default`` is ignored; when it has
    none, ``default`` is returned (None if not given or ``skip_defaults``)."""
    eps = _group(group)
    if eps:
        return {ep.name: _deferred(ep) for ep in eps}
    return None if skip_defaults else default
