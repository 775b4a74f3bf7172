"""Reads the ``config`` of the ``fsspec`` tracker: a root URL, or a file of settings.

``config`` is either

* the URL (or local path) of the tracker's root directory: ``/data/tracker``,
  ``memory://tracker``, ``s3://bucket/tracker``; or
* the URL of an existing *file* of ``key = value`` lines (``#`` comments), as upstream
  TorchX reads it::

      protocol = s3
      root_path = bucket/tracker
      client_kwargs.endpoint_url = http://localhost:5000   # dotted keys nest

  ``protocol`` and ``root_path`` are required; every other key is passed to
  ``fsspec.filesystem(protocol, ...)`` (credentials, endpoints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FsspecTrackerConfig:
    """Where the tracker stores runs: a protocol, a root path and filesystem options."""

    protocol: str
    root_path: str
    storage_options: dict[str, Any] = field(default_factory=dict)


def parse_settings(text: str, source: str) -> FsspecTrackerConfig:
    """Reads ``key = value`` lines.

    Raises:
        ValueError: a line is malformed, a key is repeated, or protocol/root_path is missing
    """
    settings: dict[str, Any] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ValueError(f"{source}:{lineno}: expected `key = value` (dotted keys nest), got {raw.strip()!r}")
        _put(settings, key.split("."), value, f"{source}:{lineno}")
    missing = [k for k in ("protocol", "root_path") if not isinstance(settings.get(k), str) or not settings[k]]
    if missing:
        raise ValueError(
            f"{source}: missing {' and '.join(missing)}; add e.g. `protocol = file` and `root_path = /data/tracker`"
        )
    protocol = settings.pop("protocol")
    root_path = settings.pop("root_path")
    return FsspecTrackerConfig(protocol=protocol, root_path=root_path, storage_options=settings)


def _put(target: dict[str, Any], keys: list[str], value: str, where: str) -> None:
    head, rest = keys[0], keys[1:]
    if not rest:
        if head in target:
            raise ValueError(f"{where}: {head!r} is set twice")
        target[head] = value
        return
    child = target.setdefault(head, {})
    if not isinstance(child, dict):
        raise ValueError(f"{where}: {head!r} is both a value and a group of dotted keys")
    _put(child, rest, value, where)
