"""Calls the event hooks (``torchx_pre_submit``, ``torchx_post_submit``) through pluggy.

One :class:`pluggy.PluginManager` per registry holds the plugins that implement an event
hook (the one discovery built when it ran in this process, else one built on first use).
Each plugin's implementation (pluggy's ``HookImpl``) is called with the arguments its
``argnames`` declare, as pluggy's hook caller does, so ``def torchx_pre_submit(app)`` works; torchx
calls them one at a time to chain amendments, name the plugin that rejected an app, and keep
calling after a post-submit hook failed. Order: distribution names, ``tryfirst``/``trylast`` moving one to an end.
"""

from __future__ import annotations

import importlib

from torchx.plugins import SubmissionRejected, get_registry
from torchx.plugins.registrations import EVENT_HOOKS
from torchx.plugins.registry import Registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import pluggy

    from torchx.specs.roles import AppDef

#: (registry, hook name -> [(plugin ident, that plugin's implementation)] in call order)
_built: tuple[Registry, dict[str, list[tuple[str, Any]]]] | None = None


def forget() -> None:
    """Drops the callers (the registry was reset)."""
    global _built
    _built = None


def _manager(registry: Registry) -> pluggy.PluginManager:
    pm: pluggy.PluginManager | None = registry.plugin_manager
    if pm is None:
        from torchx.plugins.discovery import new_plugin_manager

        pm = new_plugin_manager()
        for info in registry.event_hook_plugins():
            pm.register(importlib.import_module(info.value), name=info.ident)
        registry.plugin_manager = pm
    return pm


def callers(hook_name: str) -> list[tuple[str, Any]]:
    """(plugin ident, ``pluggy.HookImpl``) of every plugin implementing ``hook_name``, in call order."""
    global _built
    registry = get_registry()
    if _built is None or _built[0] is not registry:
        # distribution-name order (the registry's), tryfirst ones first and trylast ones last
        plugins = registry.event_hook_plugins()
        table: dict[str, list[tuple[str, Any]]] = {hook: [] for hook in EVENT_HOOKS}
        if plugins:
            pm = _manager(registry)
            for hook in EVENT_HOOKS:
                # a plugin lists only the hooks discovery accepted (never a wrapper)
                position = {p.ident: i for i, p in enumerate(plugins) if hook in p.event_hooks}
                impls = [i for i in getattr(pm.hook, hook).get_hookimpls() if i.plugin_name in position]
                impls.sort(key=lambda i: (0 if i.tryfirst else 2 if i.trylast else 1, position[i.plugin_name]))
                table[hook].extend((impl.plugin_name, impl) for impl in impls)
        _built = (registry, table)
    return _built[1][hook_name]


def run_pre_submit(app: AppDef, scheduler: str, cfg: Any) -> AppDef:
    """Passes ``app`` through every ``torchx_pre_submit`` hook in turn; returns the final app.

    Raises:
        SubmissionRejected: a hook refused the app
    """
    for ident, impl in callers("torchx_pre_submit"):
        try:
            result = _call(impl, app=app, scheduler=scheduler, cfg=cfg)
        except SubmissionRejected as e:
            raise SubmissionRejected(f"rejected by plugin {ident}: {e}") from None
        if result is not None:
            app = result
    return app


def run_post_submit(app_handle: str, app: AppDef, scheduler: str, cfg: Any) -> None:
    """Calls every ``torchx_post_submit`` hook; their errors are logged, not raised."""
    for ident, impl in callers("torchx_post_submit"):
        try:
            _call(impl, app_handle=app_handle, app=app, scheduler=scheduler, cfg=cfg)
        except Exception as e:
            import logging  # only when a hook failed: not free on the dry-run path

            logging.getLogger(__name__).warning("plugin %s: torchx_post_submit failed: %s", ident, e)


def _call(impl: pluggy.HookImpl, **kwargs: Any) -> Any:
    """Calls one implementation with the arguments it declares (pluggy's rule)."""
    return impl.function(*[kwargs[name] for name in impl.argnames])
