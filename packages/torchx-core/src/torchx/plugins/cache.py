"""Keeps the discovered :class:`Registry` on disk until the installed packages change.

The cache is keyed by the interpreter and ``sys.path``; it is valid while every
``sys.path`` directory and every plugin module file has the modification time it had
when the cache was written (installing or removing a distribution changes its
site-packages directory; fixing a plugin that failed to import changes a file its import
went through, see ``PluginInfo.watch``). ``TORCHX_NO_PLUGIN_CACHE=1`` turns it off; the directory is
``$TORCHX_CACHE_DIR`` or ``$XDG_CACHE_HOME/torchx`` (default ``~/.cache/torchx``).
"""

from __future__ import annotations

import binascii
import marshal
import os
import sys

from torchx.plugins.registry import Registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FORMAT = 7


def caching_enabled() -> bool:
    """False when ``TORCHX_NO_PLUGIN_CACHE`` is set (it turns off every torchx cache)."""
    return not os.environ.get("TORCHX_NO_PLUGIN_CACHE")


def cache_dir() -> str:
    """Where torchx keeps caches."""
    explicit = os.environ.get("TORCHX_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchx")


def read_cache(name: str, version: int) -> Any:
    """What :func:`write_cache` stored as ``name`` with this ``version``, or None (no such file,
    unreadable, another version, or caching turned off)."""
    if not caching_enabled():
        return None
    try:
        with open(os.path.join(cache_dir(), name), "rb") as f:
            data = marshal.loads(f.read())  # one read: marshal.load(f) reads the file piece by piece
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return data.get("data") if isinstance(data, dict) and data.get("format") == version else None


def write_cache(name: str, version: int, data: Any) -> None:
    """Stores ``data`` (marshal-able) as cache file ``name``, atomically; silently does nothing if it cannot."""
    if not caching_enabled():
        return
    path = os.path.join(cache_dir(), name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            marshal.dump({"format": version, "data": data}, f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass


def _cache_name() -> str:
    # TORCHX_PLUGINS_SOURCE selects what discovery reads: each value has its own cache
    key = "\0".join([sys.version, sys.executable, os.environ.get("TORCHX_PLUGINS_SOURCE", ""), *sys.path]).encode()
    return f"plugins-{binascii.crc32(key):08x}-{len(key)}.marshal"


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return -1


def _stamp(files: list[str]) -> list[tuple[str, int]]:
    return [(p, _mtime(p)) for p in [*sys.path, *files]]


def load() -> Registry | None:
    """The cached registry, or None when there is none or it is stale."""
    data = read_cache(_cache_name(), _FORMAT)
    if not isinstance(data, dict):
        return None
    stamp = data.get("stamp", [])
    if any(_mtime(path) != mtime for path, mtime in stamp) or [p for p, _ in stamp[: len(sys.path)]] != sys.path:
        return None
    try:
        return Registry.from_data(data["registry"])
    except (KeyError, TypeError, ValueError):
        return None


def store(registry: Registry) -> None:
    """Writes ``registry`` to the cache (silently does nothing if it cannot)."""
    if not caching_enabled():
        return
    files = [path for p in registry.plugins for path in p.watch]
    write_cache(_cache_name(), _FORMAT, {"stamp": _stamp(files), "registry": registry.to_data()})


def clear() -> None:
    """Removes this interpreter's cache file."""
    try:
        os.unlink(os.path.join(cache_dir(), _cache_name()))
    except OSError:
        pass
