"""Run ids as path segments.

Run ids are app handles (``local_cwd://torchx/echo-abc``): they hold ``/`` and ``:`` and
may differ only in case. A run id becomes unpadded base32 of its UTF-8 bytes (one case,
letters and digits only: safe on every filesystem and object store, and reversible).
Ids whose base32 form would be too long for one path segment become ``sha256-<hex>``;
for those the id itself is stored next to the key (see :func:`is_hashed`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib

#: longest encoded key kept reversible (path segments are limited to 255 bytes)
MAX_ENCODED = 200
_HASHED_PREFIX = "sha256-"


def encode(run_id: str) -> str:
    """The path segment of ``run_id``."""
    if not run_id:
        raise ValueError("a run id must not be empty")
    data = run_id.encode("utf-8")
    key = base64.b32encode(data).decode("ascii").rstrip("=")
    if len(key) <= MAX_ENCODED:
        return key
    return _HASHED_PREFIX + hashlib.sha256(data).hexdigest()


def is_hashed(key: str) -> bool:
    """True when ``key`` cannot be decoded (the run id must be read from storage)."""
    return key.startswith(_HASHED_PREFIX)


def decode(key: str) -> str:
    """The run id of a key made by :func:`encode` (not of a hashed key).

    Raises:
        ValueError: ``key`` is not an encoded run id
    """
    try:
        return base64.b32decode(key + "=" * (-len(key) % 8)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError(f"{key!r} is not an encoded torchx run id") from None
