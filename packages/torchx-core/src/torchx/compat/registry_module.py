"""``torchx.plugins.registry`` is both torchx's registry module and, called, upstream TorchX's
``registry()`` function (:func:`torchx.compat.plugin_registry.registry`): the module's class."""

from __future__ import annotations

from types import ModuleType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class CallableRegistryModule(ModuleType):
    """The class of ``torchx.plugins.registry``: callable as upstream TorchX's ``torchx.plugins.registry()``.

    Upstream's function and this module share the name ``torchx.plugins.registry``; whichever
    of the two a user reaches, ``registry()`` and ``registry.cache_clear()`` work.
    """

    # upstream's function lives in plugin_registry, which imports the registry module: it is
    # looked up by name when called, so the registry module can import this one

    def __call__(self) -> Any:
        """Upstream's registry view: :func:`torchx.compat.plugin_registry.registry`."""
        return _upstream_registry()()

    def cache_clear(self) -> None:
        """Forgets upstream's registry view (the next call makes a new one)."""
        _upstream_registry().cache_clear()


def _upstream_registry() -> Any:
    import importlib

    return importlib.import_module("torchx.compat.plugin_registry").registry
