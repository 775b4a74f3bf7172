"""The job model: :class:`AppDef`, :class:`Role`, :class:`Resource`, states, run options,
macros, mounts, named resources, app handles, and component materialization.

Usage::

    import torchx.specs as specs

    app = specs.AppDef(
        name="echo",
        roles=[specs.Role(name="echo", image="/tmp", entrypoint="/bin/echo", args=["hello"])],
    )
"""

from torchx.specs.api import *  # noqa: F403
from torchx.specs.api import __all__ as _api_all
from torchx.specs.named_resources import (
    _named_resource_factories,
    get_named_resources,
    named_resources,
    resource,
)
from torchx.specs.roles import GiB

__all__ = [
    *_api_all,
    "TORCHX_HOME",  # noqa: F405 - lazy, see __getattr__
    "CapabilityKey",  # noqa: F405 - lazy, see __getattr__
    "NA",  # noqa: F405 - lazy, see __getattr__
    "TORCHX_CONTEXT_NAME",  # noqa: F405 - lazy, see __getattr__
    "app_metadata",  # noqa: F405 - lazy, see __getattr__
    "cases",  # noqa: F405 - lazy, see __getattr__
    "GiB",
    "_named_resource_factories",
    "get_named_resources",
    "materialize_appdef",  # noqa: F405 - lazy, see __getattr__
    "named_resources",
    "resource",
]

_LAZY = {
    "materialize_appdef": "torchx.specs.builders",
    "parse_args": "torchx.specs.builders",
    "file_linter": "torchx.specs.file_linter",
    "finder": "torchx.specs.finder",
    "builders": "torchx.specs.builders",
    "overlays": "torchx.specs.overlays",
    "capabilities": "torchx.specs.capabilities",
    "CapabilityKey": "torchx.specs.capabilities",
    "TORCHX_HOME": "torchx.specs.home",
    "cases": "torchx.specs.casing",
    "app_metadata": "torchx.specs.metadata_keys",
    "NA": "torchx.specs.metadata_keys",
    "TORCHX_CONTEXT_NAME": "torchx.specs.metadata_keys",
}


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'torchx.specs' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(module_name)
    return module if module_name.endswith("." + name) else getattr(module, name)
