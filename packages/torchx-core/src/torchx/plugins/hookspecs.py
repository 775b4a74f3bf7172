"""The event hooks a torchx plugin can implement, called through pluggy. This module is their reference.

A module of event hooks (functions marked ``@torchx.plugins.hookimpl``, named after the hooks
below) is registered like any registration, as an entry point of the group ``torchx``:
``"hooks.site-policy" = "my_pkg.policy"``. It is imported on the first event (never by
discovery) and registered with pluggy.

How event hooks are called:

- An implementation may declare any subset of the spec's arguments, by name
  (``def torchx_pre_submit(app)`` is fine); it receives only those (pluggy's ``argnames``).
- Implementations run one after another in the order of their distributions' names;
  ``@hookimpl(tryfirst=True)`` / ``(trylast=True)`` moves one to the front / the back.
- Wrappers (``hookwrapper=True`` / ``wrapper=True``) are not supported for event hooks: they
  are never called (a plugin error, or a warning when found at the first event).
- What a return value and a raise mean is given per hook below.

(Registration hooks, ``torchx_schedulers`` ..., are the older way: :mod:`torchx.compat.hook_modules`.)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from torchx.specs import AppDef

hookspec = pluggy.HookspecMarker("torchx")


def new_plugin_manager() -> pluggy.PluginManager:
    """A pluggy manager with the torchx event hookspecs."""
    pm = pluggy.PluginManager("torchx")
    pm.add_hookspecs(sys.modules[__name__])
    return pm


@hookspec
def torchx_pre_submit(app: AppDef, scheduler: str, cfg: Mapping[str, Any]) -> AppDef | None:
    """Called before an app is submitted (and before a dry run). Enforce policy here.

    Return a new AppDef to amend the app: the next hook sees the amended one, and the
    last one's result is what is submitted (never mutate ``app`` itself: the caller's
    AppDef must stay as it was). Return None to leave it. Raise
    :class:`torchx.plugins.SubmissionRejected` with a message that says what to change
    to reject it: nothing is submitted, later hooks are not called, and the caller gets
    ``SubmissionRejected("rejected by plugin <name>: <message>")``. Any other exception
    propagates to the caller as it is.

    Example::

        @hookimpl
        def torchx_pre_submit(app, scheduler, cfg):
            if scheduler == "slurm" and "partition" not in cfg:
                raise SubmissionRejected("set -cfg partition=... (site policy)")
    """


@hookspec
def torchx_post_submit(app_handle: str, app: AppDef, scheduler: str, cfg: Mapping[str, Any]) -> None:
    """Called after an app was submitted, with its handle; the return value is ignored.

    Every hook is called, even when an earlier one raised: an exception is logged as a
    warning naming the plugin and never reaches the caller (the app is already running).

    Example::

        @hookimpl
        def torchx_post_submit(app_handle, app, scheduler, cfg):
            audit_log.write(f"{app_handle} {app.name}\\n")
    """
