"""Helpers both AWS schedulers share: the submitting user, job tags, names, macros."""

from __future__ import annotations

import re

from torchx.specs.roles import AppDef

#: tag every torchx job carries (its value: the torchx version); ``list`` looks for it
TAG_VERSION = "torchx.pytorch.org/version"
TAG_APP_NAME = "torchx.pytorch.org/app-name"
TAG_USER = "torchx.pytorch.org/user"

# AWS tag keys/values: letters, digits, spaces and _ . : / = + - @
_TAG_BAD = re.compile(r"[^\w .:/=+\-@]")


def default_user() -> str:
    """The local user name (``"unknown"`` when it cannot be determined)."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def tag_text(text: str, limit: int = 256) -> str:
    """``text`` as an AWS tag value (or key, with ``limit=128``): other characters made ``_``, cut to ``limit``."""
    return _TAG_BAD.sub("_", str(text))[:limit]


def job_tags(app: AppDef, user: str) -> dict[str, str]:
    """The tags of an app's job: torchx version, app name, user, and the app's metadata (but
    not a metadata key :data:`~torchx.schedulers.recovery.RECOVERY_MARK`: only a job submitted
    to recover carries it)."""
    from torchx.schedulers.recovery import RECOVERY_MARK
    from torchx.version import __version__

    tags = {tag_text(k, 128): tag_text(v) for k, v in app.metadata.items()}
    tags.pop(RECOVERY_MARK, None)
    tags.update({TAG_VERSION: __version__, TAG_APP_NAME: tag_text(app.name), TAG_USER: tag_text(user)})
    return tags
