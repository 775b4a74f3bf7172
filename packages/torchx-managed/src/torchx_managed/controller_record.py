"""Which controller job serves a journal directory: its record, ``controller.json`` in the
directory, written by whoever started the controller (a controller job on a scheduler, or the
Kubernetes Deployment of ``controller=kubernetes``) and read by every look at a job."""

from __future__ import annotations

import json
import os
import time

from torchx.util.files import write_atomic

#: the controller job's record, in the journal directory
CONTROLLER_FILE = "controller.json"


def controller_handle(root: str) -> str | None:
    """The handle of the last controller job submitted for ``root`` (None: none was)."""
    try:
        with open(os.path.join(root, CONTROLLER_FILE), encoding="utf-8") as f:
            handle = json.load(f).get("handle")
    except (OSError, ValueError, AttributeError):
        return None
    return handle if isinstance(handle, str) else None


def record_controller(root: str, handle: str) -> None:
    """Records ``handle`` as the controller of ``root`` (atomically: readers see it whole or not)."""
    write_atomic(os.path.join(root, CONTROLLER_FILE), json.dumps({"handle": handle, "submitted": time.time()}))
