"""Registers the builtin components (``utils.echo``, ``dist.ddp``, ...) with torchx."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import ComponentSource, hookimpl


@hookimpl
def torchx_components() -> Iterator[ComponentSource]:
    """The builtin components, named by their module path: ``utils.echo``, ``dist.ddp``."""
    yield ComponentSource(prefix="", module="torchx_components")
