"""The import hook behind upstream TorchX module paths (``torchx.schedulers.slurm_scheduler`` ...).

Upstream TorchX keeps every backend inside the ``torchx`` package; here each backend is its
own distribution. A plugin declares the upstream paths it provides with ``LegacyModule``
records (hook ``torchx_legacy_modules``), and this hook resolves ``import <path>`` to the
plugin's module: the very same module object is bound to both names, nothing is copied.

Two finders are installed on :data:`sys.meta_path` when ``torchx`` is imported (cheap: no
plugin is looked up until such an import happens):

- at the front, one that answers only for the paths in
  :data:`torchx.util.distributions.LEGACY_MODULE_DISTRIBUTIONS` (and submodules of those
  that are packages, so ``torchx.components.dist`` is ``torchx_components.dist``, not a
  second copy). When no installed plugin provides such a path, the import fails with
  ``ModuleNotFoundError: torchx.schedulers.slurm_scheduler is provided by
  torchx-sched-slurm: pip install torchx-sched-slurm``.
- at the back, one that answers for any other ``torchx.*`` path a plugin registers, once the
  regular finders found nothing; it also supplies empty parent packages that upstream has
  and core does not (``torchx.runtime``, ``torchx.tracker.backend``).
"""

from __future__ import annotations

import sys

from torchx.util.distributions import LEGACY_MODULE_DISTRIBUTIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from torchx.plugins.registry import Registry


def known_distribution(fullname: str) -> str | None:
    """The distribution that provides ``fullname`` (or the package it is in), per core's table."""
    name = fullname
    while "." in name:
        dist = LEGACY_MODULE_DISTRIBUTIONS.get(name)
        if dist is not None:
            return dist
        name = name.rpartition(".")[0]
    return None


class _AliasLoader:
    """Loads a legacy path as the module ``target`` itself (imported under its own name)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._own_spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib

        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system stamped the alias' spec on the module: give it back its own
        module.__spec__ = self._own_spec


class LegacyModuleFinder:
    """A :data:`sys.meta_path` finder for upstream TorchX module paths (see the module docstring).

    Args:
        tail: True for the finder placed after the regular ones
    """

    def __init__(self, tail: bool) -> None:
        self.tail = tail

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        """The spec of the module providing ``fullname``, or None when this finder has nothing to say.

        Raises:
            ModuleNotFoundError: ``fullname`` is a path core knows and no installed plugin provides it
        """
        if not fullname.startswith("torchx."):
            return None
        dist = known_distribution(fullname)
        if (dist is None) != self.tail:
            return None
        from importlib.machinery import ModuleSpec

        from torchx.compat.legacy import legacy_target  # not at import: ``import torchx`` loads this module

        registry = _registry()
        resolved = legacy_target(registry, fullname)
        if resolved is not None:
            return ModuleSpec(fullname, _AliasLoader(resolved))  # type: ignore[arg-type]  # a Loader by protocol
        if dist is not None:
            raise ModuleNotFoundError(_missing(fullname, dist, registry), name=fullname)
        below = fullname + "."
        registered = registry.legacy_modules
        if any(name.startswith(below) for name in [*LEGACY_MODULE_DISTRIBUTIONS, *registered]):
            return ModuleSpec(fullname, None, is_package=True)  # an empty parent package upstream has
        return None


def _missing(fullname: str, dist: str, registry: Registry) -> str:
    """Why ``fullname`` cannot be imported: its distribution is not installed, or it is and failed."""
    name = dist.partition("[")[0]
    broken = [e for p in registry.plugins if p.dist == name for e in p.errors]
    if broken:
        return f"{fullname} is provided by {name}, which is installed but failed to load: {broken[0]} (see `torchx plugins`)"
    from torchx.util.distributions import pip_install

    return f"{fullname} is provided by {name}: {pip_install(dist)}"


def _registry() -> Registry:
    """The plugin registry (while discovery fills it, for a plugin module it imports: what is
    registered so far, every entry point's upstream module paths included)."""
    from torchx.plugins import get_registry

    return get_registry()


def install() -> None:
    """Puts the two finders on :data:`sys.meta_path` (once)."""
    if any(isinstance(f, LegacyModuleFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, LegacyModuleFinder(tail=False))
    sys.meta_path.append(LegacyModuleFinder(tail=True))
