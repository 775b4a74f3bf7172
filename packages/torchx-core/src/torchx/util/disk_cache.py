"""torchx's cache files: small marshal-ed values under ``$TORCHX_CACHE_DIR`` (default
``$XDG_CACHE_HOME/torchx``, ``~/.cache/torchx``), each with a format version, written
atomically, all turned off by ``TORCHX_NO_PLUGIN_CACHE=1`` (the plugin registry, component
scans, scheduler run options)."""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
