"""How core calls a scheduler's extension points: the workspace it may build, and methods
whose signatures grew over TorchX's history."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.workspace.api import WorkspaceMixin


def workspace_of(scheduler: object) -> WorkspaceMixin[Any] | None:
    """``scheduler`` if it builds workspaces (is a :class:`~torchx.workspace.api.WorkspaceMixin`), else None.

    A scheduler class that mixes the workspace API in has imported its module; when nothing
    has, no scheduler can be one, and the module is not imported to find that out (it is
    not free on the CLI's start-up path).
    """
    api = sys.modules.get("torchx.workspace.api")
    return scheduler if api is not None and isinstance(scheduler, api.WorkspaceMixin) else None


def call_declared(method: Any, *args: object) -> Any:
    """Calls ``method`` with as many of ``args`` as it declares positional parameters for.

    Extension points gained parameters over TorchX's history (``_validate(app, scheduler)``
    became ``_validate(app, scheduler, cfg)``; ``list()`` became ``list(cfg)``); a scheduler
    written for an older TorchX keeps its override, and is called the way it declared it.
    """
    func = getattr(method, "__func__", method)
    code = getattr(func, "__code__", None)
    if code is None or code.co_flags & 0x04:  # not plain Python, or takes *args: pass everything
        return method(*args)
    declared = code.co_argcount - (1 if getattr(method, "__self__", None) is not None else 0)
    return method(*args[: max(declared, 0)])
