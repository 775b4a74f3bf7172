"""Hook module of a plugin written for plugin API levels 1-2 (loads)."""

from torchx.plugins import SchedulerPlugin, hookimpl

TORCHX_PLUGIN_API = (1, 2)


@hookimpl
def torchx_schedulers():  # type: ignore[no-untyped-def]
    yield SchedulerPlugin(
        "api_current", "api_current.impl:create_scheduler", "written for plugin API levels 1-2 (loads)"
    )


@hookimpl
def torchx_pre_submit(app):  # type: ignore[no-untyped-def]
    return None
