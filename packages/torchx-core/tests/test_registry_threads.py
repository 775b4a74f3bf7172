"""The plugin registry loaded from several threads at once, and a plugin module that looks plugins
up while discovery imports it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torchx.plugins
from torchx.plugins import get_registry

SLOW_PLUGIN = """
import time
from torchx.plugins import hookimpl, NamedResourcePlugin, SchedulerPlugin
from torchx.specs import Resource

time.sleep(0.3)  # discovery is still importing this when the other threads ask


def big():
    return Resource(cpu=64, gpu=0, memMB=1024)


@hookimpl
def torchx_schedulers():
    yield SchedulerPlugin("slow", "slow_plugin:create", "a scheduler found slowly")


@hookimpl
def torchx_named_resources():
    yield NamedResourcePlugin("slow_big", "slow_plugin:big")
"""

LOOKS_UP_AT_IMPORT = """
from torchx.plugins import get_registry, hookimpl, SchedulerPlugin
from torchx.specs import get_named_resources

SEEN = sorted(get_registry().schedulers)  # what is registered so far: every entry point's
CPUS = get_named_resources("early_big").cpu


@hookimpl
def torchx_schedulers():
    yield SchedulerPlugin("eager", "eager_plugin:create", "registered after it looked")
"""


@pytest.fixture
def slow_plugin(make_dist: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin whose import takes 0.3 s, found with the plugin cache off (discovery runs)."""
    monkeypatch.setenv("TORCHX_NO_PLUGIN_CACHE", "1")
    make_dist("slow-dist", {"torchx": {"slow": "slow_plugin"}}, {"slow_plugin.py": SLOW_PLUGIN})


def _at_once(call: Callable[[str], Any], args: list[str]) -> list[Any]:
    """``call(arg)`` for every arg, each in its own thread, all at once; their results (any error raised)."""
    results: list[Any] = []
    errors: list[BaseException] = []

    def one(arg: str) -> None:
        try:
            results.append(call(arg))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=one, args=(a,)) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    return results


@pytest.mark.usefixtures("slow_plugin")
def test_threads_that_ask_during_discovery_wait_for_it() -> None:
    got = _at_once(lambda _: get_registry(), ["a", "b", "c", "d"])
    assert len(got) == 4 and all(r is got[0] for r in got)  # discovered once, by one of them
    assert "slow" in got[0].schedulers


@pytest.mark.usefixtures("slow_plugin")
def test_named_resources_looked_up_from_threads_during_discovery_are_found() -> None:
    from torchx.specs import get_named_resources

    cpus = _at_once(lambda name: get_named_resources(name).cpu, ["slow_big", "gpu.small", "slow_big", "gpu.small"])
    assert len(cpus) == 4 and sorted(cpus)[-2:] == [64, 64]


def test_a_plugin_module_that_looks_plugins_up_when_imported_sees_the_entry_points(
    make_dist: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No reentrancy guard: discovery reads every entry point before it imports a plugin
    module, and such a module's lookups see that registry (named resources included, looked up
    again once discovery is complete)."""
    import sys

    monkeypatch.setenv("TORCHX_NO_PLUGIN_CACHE", "1")
    make_dist(
        "early-dist",
        {"torchx": {"scheduler.early": "early:create", "named_resource.early_big": "early:big"}},
        {"early.py": "from torchx.specs import Resource\ndef big():\n    return Resource(cpu=32, gpu=0, memMB=1)\n"},
    )
    make_dist("eager-dist", {"torchx": {"eager": "eager_plugin"}}, {"eager_plugin.py": LOOKS_UP_AT_IMPORT})
    registry = get_registry()
    (eager,) = [p for p in registry.plugins if p.name == "eager"]
    assert eager.errors == []
    assert "early" in sys.modules["eager_plugin"].SEEN and "eager" not in sys.modules["eager_plugin"].SEEN
    assert sys.modules["eager_plugin"].CPUS == 32
    assert "eager" in registry.schedulers and registry.complete
    from torchx.specs import get_named_resources

    assert get_named_resources("early_big").cpu == 32  # the table filled during discovery is filled again
    torchx.plugins.reset()
