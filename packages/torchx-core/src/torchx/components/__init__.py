"""Compatibility home of the builtin components.

The builtins ship in the ``torchx-components`` distribution (import package
``torchx_components``). Code written for upstream TorchX keeps working:
``from torchx.components.dist import ddp`` loads ``torchx_components/dist.py`` when that
distribution is installed.
"""

import importlib.util as _util

_spec = _util.find_spec("torchx_components")
if _spec is not None and _spec.submodule_search_locations:
    __path__.extend(_spec.submodule_search_locations)
