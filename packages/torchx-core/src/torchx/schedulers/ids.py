"""Unique ids for apps."""

from __future__ import annotations

import os
import re


def random_id() -> str:
    """A random 12-character id of lowercase letters and digits, starting with a letter."""
    raw = int.from_bytes(os.urandom(8), "big")
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    chars = [alphabet[raw % 26]]
    raw //= 26
    for _ in range(11):
        chars.append(alphabet[raw % 36])
        raw //= 36
    return "".join(chars)


def make_unique(name: str, string_length: int = 0) -> str:
    """``name-<random>``: the random part is :func:`random_id` (12 characters), or exactly
    ``string_length`` characters when that is > 0 (as TorchX)."""
    return f"{name}-{get_len_random_id(string_length) if string_length > 0 else random_id()}"


def sanitize_name(name: str, max_length: int = 63, allowed: str = r"a-z0-9\-") -> str:
    """Lowercases ``name`` and replaces characters outside ``allowed`` with ``-``.

    The result starts and ends with an alphanumeric character (``"app"`` if nothing is left).
    """
    cleaned = re.sub(f"[^{allowed}]+", "-", name.lower()).strip("-_.")
    cleaned = cleaned[:max_length].rstrip("-_.")
    return cleaned or "app"


def random_uint64() -> int:
    """A random 64-bit unsigned integer."""
    return int.from_bytes(os.urandom(8), "big")


def get_len_random_id(string_length: int) -> str:
    """A random id of exactly ``string_length`` characters (lowercase letters and digits)."""
    out = ""
    while len(out) < string_length:
        out += random_id()
    return out[:string_length]
