"""Calls the event hooks (``torchx_pre_submit``, ``torchx_post_submit``) through pluggy.

One :class:`pluggy.PluginManager` per registry holds the plugins' modules of event hooks
(``hooks.<name>`` entry points, ``torchx``-group hook modules), imported on the first event.
Each ``HookImpl`` is called with the arguments its ``argnames`` declare, as pluggy's hook
caller does, one at a time: to chain amendments, name the plugin that rejected an app, and
keep calling after a post-submit hook failed. Order: distribution names, then ``tryfirst``/``trylast``.
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

#: (registry, hook name -> [(plugin name, that plugin's implementation)] in call order)
_built: tuple[Registry, dict[str, list[tuple[str, Any]]]] | None = None


def forget() -> None:
    """Drops the callers (the registry was reset)."""
    global _built
    _built = None


def _warn(message: str, *args: object) -> None:
    import logging  # only when something is wrong: not free on the dry-run path

    logging.getLogger(__name__).warning(message, *args)


def _register(registry: Registry) -> tuple[pluggy.PluginManager, dict[str, int]]:
    """The registry's manager with every module of event hooks registered; plugin name -> its position."""
    from torchx.plugins import hookspecs  # pluggy: only when a plugin has event hooks

    pm: pluggy.PluginManager = registry.plugin_manager or hookspecs.new_plugin_manager()
    registry.plugin_manager = pm
    position: dict[str, int] = {}
    for info in registry.event_hook_plugins():
        for module in info.hook_modules:
            name = info.ident if module == info.value else f"{info.dist}:{module}"
            if pm.get_plugin(name) is None:
                try:
                    pm.register(importlib.import_module(module), name=name)
                except Exception as e:
                    _warn("plugin %s: cannot load event hooks %r: %s", name, module, e)
                    continue
            position[name] = len(position)
    return pm, position


def callers(hook_name: str) -> list[tuple[str, Any]]:
    """(plugin name, ``pluggy.HookImpl``) of every plugin implementing ``hook_name``, in call order."""
    global _built
    registry = get_registry()
    if _built is None or _built[0] is not registry:
        table: dict[str, list[tuple[str, Any]]] = {hook: [] for hook in EVENT_HOOKS}
        if registry.event_hook_plugins():
            pm, position = _register(registry)
            for hook in EVENT_HOOKS:
                impls = [i for i in getattr(pm.hook, hook).get_hookimpls() if i.plugin_name in position]
                for impl in [i for i in impls if i.hookwrapper or getattr(i, "wrapper", False)]:
                    _warn("plugin %s: %s is a wrapper (hookwrapper/wrapper=True): never called", impl.plugin_name, hook)
                    impls.remove(impl)
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
            _warn("plugin %s: torchx_post_submit failed: %s", ident, e)


def _call(impl: pluggy.HookImpl, **kwargs: Any) -> Any:
    """Calls one implementation with the arguments it declares (pluggy's rule)."""
    return impl.function(*[kwargs[name] for name in impl.argnames])
