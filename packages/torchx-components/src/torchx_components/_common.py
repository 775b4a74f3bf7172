"""Helpers shared by the component modules (not components themselves: ``_`` modules are never listed)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from torchx import specs


def resource(cpu: int, gpu: int, memMB: int, h: str | None) -> specs.Resource:
    """The named resource ``h`` if given, else one made of the numbers.

    Raises:
        ValueError: ``h`` names no known resource (the message suggests close names)
    """
    try:
        return specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h)
    except KeyError as e:  # UnknownNamedResourceError: report it as bad component input
        raise ValueError(str(e.args[0]) if e.args else str(e)) from None


def mounts(opts: list[str] | None) -> list[specs.Mount]:
    """Parses ``--mounts`` strings (``type=bind,src=...,dst=...``); ``None`` or empty gives no mounts."""
    return specs.parse_mounts(opts) if opts else []


def shell_join(words: Iterable[str]) -> str:
    """``words`` as one shell command line, each quoted so the shell passes it through unchanged."""
    return " ".join(shlex.quote(w) for w in words)
