"""Helpers the builtin component modules share (public, so `torchx builtins --print` output imports only public names; they are not components)."""

from __future__ import annotations

from torchx import specs
from torchx.specs.macros import macros


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


def as_given(text: str) -> str:
    """``text`` as a Role arg that reaches the process as given but for its macros (``$$`` stays ``$$``)."""
    return macros.escape(text, keep=macros.NAMES)


def macro_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` as Role env: each value as given but for its macros (see :func:`as_given`)."""
    return {k: as_given(v) for k, v in env.items()}
