"""Keeps the discovered :class:`Registry` on disk until the installed packages change.

The cache is keyed by the interpreter and ``sys.path``; it is valid while every ``sys.path``
directory holds the same distributions and plugin packages (installing, reinstalling or removing
a distribution changes its site-packages directory and its own time): registrations are read from metadata, so
that is all there is to watch. The compatibility sources that import plugin modules (hook
modules, namespace packages) add the files those went through (``PluginInfo.watch``: editing
one, or fixing a module that failed to import, is noticed). A ``sys.path`` directory whose
modification time changed is listed once to tell: the script's directory or the current one
(``python -m torchx``) changes whenever a file is written there, which must not cost a new
discovery each time; the cache is then rewritten with the new time. Where and when it is
kept: :mod:`torchx.util.disk_cache`.
"""

from __future__ import annotations

import binascii
import os
import sys

from torchx.plugins.registry import Registry
from torchx.util.disk_cache import cache_dir, caching_enabled, read_cache, write_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FORMAT = 11

#: names in a ``sys.path`` directory that can change what discovery finds
_ENDS = (".dist-info", ".egg-info", ".egg-link", ".egg", ".pth", "torchx_plugins")


def _cache_name() -> str:
    # TORCHX_PLUGINS_SOURCE selects what discovery reads: each value has its own cache
    key = "\0".join([sys.version, sys.executable, os.environ.get("TORCHX_PLUGINS_SOURCE", ""), *sys.path]).encode()
    return f"plugins-{binascii.crc32(key):08x}-{len(key)}.marshal"


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return -1


def _contents(folder: str) -> int:
    """A checksum of the names and times of the distributions, ``.pth`` files and plugin namespace package in
    ``folder`` (one reinstalled at the same version is new); -1 if it cannot be read."""
    try:
        with os.scandir(folder or ".") as found:
            names = [f"{e.name} {e.stat(follow_symlinks=False).st_mtime_ns}" for e in found if e.name.endswith(_ENDS)]
    except OSError:
        return -1
    return binascii.crc32("\0".join(sorted(names)).encode())


def _stamp(files: list[str]) -> dict[str, Any]:
    return {
        "path": [(p, _mtime(p), _contents(p)) for p in sys.path],
        "files": [(p, _mtime(p)) for p in files],
    }


def _still_valid(stamp: dict[str, Any]) -> tuple[bool, bool]:
    """(valid, to rewrite): whether ``stamp`` still describes this ``sys.path`` and these
    files, and whether a ``sys.path`` directory changed its time but not its plugins."""
    entries = stamp["path"]
    if [p for p, _, _ in entries] != sys.path:
        return False, False
    watched = {p for p, _ in stamp["files"]}
    if any(_mtime(path) != mtime for path, mtime in stamp["files"]):
        return False, False
    retimed = False
    for path, mtime, contents in entries:
        if _mtime(path) == mtime:
            continue
        if path in watched or _contents(path) != contents:
            return False, False
        retimed = True
    return True, retimed


def load() -> Registry | None:
    """The cached registry, or None when there is none or it is stale."""
    data = read_cache(_cache_name(), _FORMAT)
    if not isinstance(data, dict):
        return None
    try:
        valid, retimed = _still_valid(data["stamp"])
        if not valid:
            return None
        registry = Registry.from_data(data["registry"])
    except (KeyError, TypeError, ValueError):
        return None
    if retimed:
        store(registry, data["stamp"]["files"])
    return registry


def store(registry: Registry, files: list[tuple[str, int]] | None = None) -> None:
    """Writes ``registry`` to the cache (silently does nothing if it cannot); ``files``: the
    watched files as stamped when it was discovered (default: the registry's, stamped now)."""
    if not caching_enabled():
        return
    stamp = _stamp([path for p in registry.plugins for path in p.watch])
    if files is not None:
        stamp["files"] = files
    write_cache(_cache_name(), _FORMAT, {"stamp": stamp, "registry": registry.to_data()})


def clear() -> None:
    """Removes this interpreter's cache file."""
    try:
        os.unlink(os.path.join(cache_dir(), _cache_name()))
    except OSError:
        pass
