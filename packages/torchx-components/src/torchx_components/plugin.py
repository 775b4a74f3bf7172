"""Registers the builtin components (``utils.echo``, ``dist.ddp``, ...) with torchx."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import ComponentSource, LegacyModule, hookimpl


@hookimpl
def torchx_components() -> Iterator[ComponentSource]:
    """The builtin components, named by their module path: ``utils.echo``, ``dist.ddp``."""
    yield ComponentSource(prefix="", module="torchx_components")


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's ``torchx.components`` package (``from torchx.components.dist import ddp``,
    ``torchx.components.component_test_base``) is this package."""
    yield LegacyModule("torchx.components", "torchx_components")
