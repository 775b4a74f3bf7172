"""Small apps for tests that run real jobs (on ``local_cwd`` unless an image is given)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.specs import AppDef


def command_app(
    *cmd: str, name: str = "t", role: str = "r", replicas: int = 1, image: str = "", **role_kwargs: Any
) -> AppDef:
    """An app of one role running ``cmd`` (``image`` defaults to the working directory, the
    image of ``local_cwd``); ``role_kwargs`` go to :class:`~torchx.specs.Role`."""
    from torchx.specs import AppDef, Role

    role_def = Role(
        role, image=image or os.getcwd(), entrypoint=cmd[0], args=list(cmd[1:]), num_replicas=replicas, **role_kwargs
    )
    return AppDef(name, [role_def])


def python_app(code: str, *args: str, **kwargs: Any) -> AppDef:
    """An app of one role running ``python -c code args`` with this interpreter (options as
    for :func:`command_app`)."""
    return command_app(sys.executable, "-c", code, *args, **kwargs)
