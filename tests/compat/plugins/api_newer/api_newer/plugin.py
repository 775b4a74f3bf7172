"""Hook module of a plugin written for plugin API levels 2-3 (newer than core)."""

from torchx.plugins import SchedulerPlugin, hookimpl

TORCHX_PLUGIN_API = (2, 3)


@hookimpl
def torchx_schedulers():  # type: ignore[no-untyped-def]
    yield SchedulerPlugin(
        "api_newer", "api_newer.impl:create_scheduler", "written for plugin API levels 2-3 (newer than core)"
    )


@hookimpl
def torchx_pre_submit(app):  # type: ignore[no-untyped-def]
    raise AssertionError("an incompatible plugin's hook must never run")
