"""Hook module of a plugin written for plugin API level 0 (older than core supports)."""

from torchx.plugins import SchedulerPlugin, hookimpl

TORCHX_PLUGIN_API = (0, 0)


@hookimpl
def torchx_schedulers():  # type: ignore[no-untyped-def]
    yield SchedulerPlugin(
        "api_older", "api_older.impl:create_scheduler", "written for plugin API level 0 (older than core supports)"
    )


@hookimpl
def torchx_pre_submit(app):  # type: ignore[no-untyped-def]
    raise AssertionError("an incompatible plugin's hook must never run")
