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


def _tag_text(text: str, limit: int) -> str:
    return _TAG_BAD.sub("_", str(text))[:limit]


def job_tags(app: AppDef, user: str) -> dict[str, str]:
    """The tags of an app's job: torchx version, app name, user, and the app's metadata."""
    from torchx.version import __version__

    tags = {_tag_text(k, 128): _tag_text(v, 256) for k, v in app.metadata.items()}
    tags.update({TAG_VERSION: __version__, TAG_APP_NAME: _tag_text(app.name, 256), TAG_USER: _tag_text(user, 256)})
    return tags
