"""Which controller job serves a journal: its record, ``controller.json`` in the journal
directory (or an object under a URL journal), written by whoever started the controller (a
controller job on a scheduler, or the Kubernetes Deployment of ``controller=kubernetes``) and
read by every look at a job.

Under a URL journal two machines may look at a job at once and both find no controller: the
right to submit one is *claimed* first, with a conditional write of the record over the version
both read (S3 ``If-Match`` / ``If-None-Match: *``), so exactly one submits; a claim whose
claimer died before recording a handle is claimed over after :data:`CLAIM_TIMEOUT` seconds.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from torchx.util.files import write_atomic

#: the controller job's record, in the journal directory
CONTROLLER_FILE = "controller.json"
#: seconds after which a claim that recorded no handle (its claimer died) may be claimed over
CLAIM_TIMEOUT = 120.0


def _is_url(root: str) -> bool:
    from torchx_managed.journal_store import is_url

    return is_url(root)


def _objects(root: str) -> Any:
    from torchx_managed.journal_store import ObjectStore

    return ObjectStore(root)


def read_record(root: str) -> tuple[dict[str, Any], str | None]:
    """The record of ``root`` (empty: none) and its version (``None``: none; ``""`` on a path,
    where versions are not kept)."""
    try:
        if _is_url(root):
            got = _objects(root).get(f"{root}/{CONTROLLER_FILE}")
            if got is None:
                return {}, None
            data, version = got[0], got[1]
        else:
            with open(os.path.join(root, CONTROLLER_FILE), "rb") as f:
                data, version = f.read(), ""
        record = json.loads(data)
    except (OSError, ValueError):
        return {}, None
    return (record, version) if isinstance(record, dict) else ({}, version)


def controller_handle(root: str) -> str | None:
    """The handle of the last controller job submitted for ``root`` (None: none was)."""
    handle = read_record(root)[0].get("handle")
    return handle if isinstance(handle, str) else None


def claim(root: str, version: str | None) -> str | None:
    """Claims the right to submit ``root``'s controller over the record read at ``version``; the
    claim's version to record over, or None if another claimed or recorded first (or claimed
    less than :data:`CLAIM_TIMEOUT` ago). On a path nothing is claimed (the controller's own
    lock fences): returns ``""``."""
    if not _is_url(root):
        return ""
    objects = _objects(root)
    url = f"{root}/{CONTROLLER_FILE}"
    current, now_version = read_record(root)
    if now_version != version:
        return None
    claimed = current.get("claimed")
    if not current.get("handle") and isinstance(claimed, (int, float)) and time.time() - claimed < CLAIM_TIMEOUT:
        return None
    # the nonce makes the claim this write's own (a write retried after a lost reply is found as ours)
    data = json.dumps({"handle": None, "claimed": time.time(), "nonce": os.urandom(8).hex()}).encode()
    got: str | None = objects.create(url, data) if version is None else objects.replace(url, data, version)
    return got


def record_controller(root: str, handle: str, version: str | None = "") -> None:
    """Records ``handle`` as the controller of ``root`` (readers see it whole or not); under a URL,
    over the claim ``version`` if given (a later claimer that took over a stale claim wins)."""
    data = json.dumps({"handle": handle, "submitted": time.time()})
    if not _is_url(root):
        write_atomic(os.path.join(root, CONTROLLER_FILE), data)
        return
    objects = _objects(root)
    url = f"{root}/{CONTROLLER_FILE}"
    if version:
        objects.replace(url, data.encode(), version)
    else:
        objects.put(url, data.encode())
