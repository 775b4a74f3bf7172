"""Hook module of a plugin that needs torchx-core>=99."""

from torchx.plugins import SchedulerPlugin, hookimpl

TORCHX_PLUGIN_API = (1, 1)


@hookimpl
def torchx_schedulers():  # type: ignore[no-untyped-def]
    yield SchedulerPlugin("api_needs_core", "api_needs_core.impl:create_scheduler", "that needs torchx-core>=99")


@hookimpl
def torchx_pre_submit(app):  # type: ignore[no-untyped-def]
    raise AssertionError("an incompatible plugin's hook must never run")


raise AssertionError("core imported a module of a plugin whose torchx-core dependency excludes it")
