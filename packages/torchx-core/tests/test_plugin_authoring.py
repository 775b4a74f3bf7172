"""torchx.plugins' upstream authoring API: register decorators, fractional helpers, resource tags."""

from __future__ import annotations

import sys
import textwrap
import types
from collections.abc import Iterator
from typing import Any

import pytest
from torchx.plugins import (
    EIGHTH,
    HALF,
    QUARTER,
    SIXTEENTH,
    WHOLE,
    PluginType,
    halve_mem_down_to,
    powers_of_two_gpus,
    register,
    resource_tags,
)
from torchx.specs import Resource
from torchx.specs import roles as specs_roles


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    """A fresh module to run plugin code in (decorators look the module up by name)."""
    mod = types.ModuleType("torchx_plugins_test_mod")
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


def run_in(mod: types.ModuleType, source: str) -> dict[str, Any]:
    exec(compile(textwrap.dedent(source), mod.__name__, "exec"), mod.__dict__)
    return mod.__dict__


def test_constants_and_tag_keys() -> None:
    assert (WHOLE, HALF, QUARTER, EIGHTH, SIXTEENTH) == (1.0, 0.5, 0.25, 0.125, 0.0625)
    assert resource_tags.RESOURCE_NAME == specs_roles._TAG_RESOURCE_NAME == "torchx/named_resources.name"
    assert resource_tags.IS_FRACTIONAL == specs_roles._TAG_IS_FRACTIONAL == "torchx/named_resources.is_fractional"
    assert PluginType.SCHEDULER.value == "torchx.schedulers"
    assert PluginType.TRACKER.namespace == "torchx_plugins.tracker"


def test_powers_of_two_gpus() -> None:
    assert powers_of_two_gpus(Resource(cpu=1, gpu=8, memMB=1)) == {1.0: "8", 0.5: "4", 0.25: "2", 0.125: "1"}
    assert powers_of_two_gpus(Resource(cpu=1, gpu=1, memMB=1)) == {1.0: "1"}
    for gpus in (0, 6):
        with pytest.raises(ValueError, match="power of two"):
            powers_of_two_gpus(Resource(cpu=1, gpu=gpus, memMB=1))


def test_halve_mem_down_to() -> None:
    assert halve_mem_down_to(minGiB=8)(Resource(cpu=1, gpu=0, memMB=64 * 1024)) == {
        1.0: "64",
        0.5: "32",
        0.25: "16",
        0.125: "8",
    }
    assert halve_mem_down_to(minGiB=12)(Resource(cpu=1, gpu=0, memMB=48 * 1024)) == {1.0: "48", 0.5: "24", 0.25: "12"}
    with pytest.raises(ValueError, match="minGiB >= 3"):
        halve_mem_down_to(minGiB=2)(Resource(cpu=1, gpu=0, memMB=48 * 1024))
    with pytest.raises(ValueError, match="multiple of 1024"):
        halve_mem_down_to(minGiB=1)(Resource(cpu=1, gpu=0, memMB=1000))


def test_scheduler_and_tracker_are_marked_and_returned_unchanged() -> None:
    def create(session_name: str, **kwargs: Any) -> None:
        return None

    assert register.scheduler()(create) is create
    assert (create._plugin_type, create._plugin_name) == (PluginType.SCHEDULER, "create")  # type: ignore[attr-defined]
    register.tracker(name="mine")(create)
    assert (create._plugin_type, create._plugin_name) == (PluginType.TRACKER, "mine")  # type: ignore[attr-defined]


def test_named_resource_with_aliases_and_fractionals(module: types.ModuleType) -> None:
    ns = run_in(
        module,
        """
        from torchx.plugins import register, powers_of_two_gpus, WHOLE
        from torchx.specs import Resource

        @register.named_resource(aliases=["big", "huge"], fractionals=powers_of_two_gpus)
        def host(fractional: float = WHOLE) -> Resource:
            return Resource(cpu=int(32 * fractional), gpu=int(4 * fractional), memMB=int(1024 * fractional))
        """,
    )
    assert sorted(ns["NAMED_RESOURCES"]) == ["big", "host", "host_1", "host_2", "host_4", "huge"]
    base = ns["host"]()
    assert (base.gpu, base.get_resource_name(), base.is_fractional()) == (4, "host", False)
    assert ns["host"](HALF).gpu == 2  # the decorated function still takes the fraction
    quarter = ns["host_1"]()
    assert (quarter.gpu, quarter.cpu, quarter.get_resource_name(), quarter.is_fractional()) == (1, 8, "host_1", True)
    whole = ns["host_4"]()
    assert (whole.get_resource_name(), whole.is_fractional()) == ("host_4", False)
    alias = ns["big"]()
    assert (alias.gpu, alias.get_resource_name()) == (4, "host")
    assert ns["big"]._plugin_base_name == "host" and ns["big"]._plugin_is_alias
    assert ns["host_2"]._plugin_base_name == "host" and not ns["host_2"]._plugin_is_alias
    for name in ("host", "big", "host_2"):
        assert ns[name].__module__ == module.__name__
        assert ns[name]._plugin_name == name
    assert ns["host"]().tags is not ns["host"]().tags  # a new resource per call


def test_named_resource_custom_name_and_dict_fractionals(module: types.ModuleType) -> None:
    ns = run_in(
        module,
        """
        from torchx.plugins import register, WHOLE, HALF
        from torchx.specs import Resource

        @register.named_resource(name="t.small", fractionals={WHOLE: "full", HALF: "half"})
        def small(fractional: float = WHOLE) -> Resource:
            return Resource(cpu=int(4 * fractional), gpu=0, memMB=1024)
        """,
    )
    assert ns["t.small"] is ns["small"]
    assert ns["t.small_half"]().cpu == 2
    assert ns["t.small_full"]().get_resource_name() == "t.small_full"


def test_duplicate_names_in_a_module_are_refused(module: types.ModuleType) -> None:
    source = """
        from torchx.plugins import register
        from torchx.specs import Resource

        @register.named_resource(aliases=["dup"])
        def one() -> Resource:
            return Resource(cpu=1, gpu=0, memMB=1)

        @register.named_resource(name="dup")
        def two() -> Resource:
            return Resource(cpu=2, gpu=0, memMB=1)
        """
    with pytest.raises(ValueError, match="'dup' is registered twice"):
        run_in(module, source)


def test_resource_without_tags() -> None:
    plain = Resource(cpu=1, gpu=0, memMB=1)
    assert plain.is_fractional() is False
    assert plain.get_resource_name() is None
