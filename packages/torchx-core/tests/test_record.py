"""@record classes behave as dataclasses for every caller, and keep heavy modules off the import path."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest
from torchx.specs import AppDef, Resource, Role
from torchx.util.record import FrozenInstanceError, deep_copy, field, fields_of, record, replace


@record
class Point:
    """A point."""

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)


@record(unsafe_hash=True)
class Key:
    """Hashable."""

    name: str


def test_init_repr_eq() -> None:
    p = Point(1, tags=["a"])
    assert (p.x, p.y, p.tags) == (1, 0, ["a"])
    assert repr(p) == "Point(x=1, y=0, tags=['a'])"
    assert p == Point(1, 0, ["a"])
    assert p != Point(2)
    assert Point(1).tags is not Point(1).tags  # a fresh default per instance
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="unhashable"):
        hash(p)
    assert hash(Key("a")) == hash(Key("a"))
    assert len({Key("a"), Key("a")}) == 1


@record(unsafe_hash=True)
class Stamped:
    """A value with a field that does not count for equality."""

    name: str
    seen: float | None = field(default=None, compare=False)


def test_a_field_with_compare_false_counts_for_neither_eq_nor_hash() -> None:
    assert Stamped("a", 1.0) == Stamped("a", 2.0)
    assert hash(Stamped("a", 1.0)) == hash(Stamped("a"))
    assert Stamped("a") != Stamped("b", 1.0)
    assert repr(Stamped("a", 1.0)) == "Stamped(name='a', seen=1.0)"
    assert [f.compare for f in dataclasses.fields(Stamped)] == [True, False]  # as dataclasses declares it
    assert [f.compare for f in fields_of(Stamped)] == [True, False]


def test_dataclasses_functions_accept_records() -> None:
    p = Point(1, 2, ["t"])
    assert dataclasses.is_dataclass(p)
    assert dataclasses.is_dataclass(Point)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags"]
    assert dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": ["t"]}
    assert dataclasses.astuple(p) == (1, 2, ["t"])
    assert dataclasses.replace(p, y=5) == Point(1, 5, ["t"])
    assert replace(p, x=9) == Point(9, 2, ["t"])
    assert copy.deepcopy(p) == p
    assert pickle.loads(pickle.dumps(p)) == p
    role = Role(name="r", image="i", args=["a"])
    assert dataclasses.replace(role, name="s").args == ["a"]
    assert dataclasses.asdict(AppDef("app", roles=[role]))["roles"][0]["resource"]["cpu"] == -1


def test_dataclass_may_subclass_a_record() -> None:
    @dataclasses.dataclass
    class Tagged(Point):
        label: str = "l"

    t = Tagged(1, label="m")
    assert (t.x, t.y, t.tags, t.label) == (1, 0, [], "m")
    assert [f.name for f in fields_of(Tagged)] == ["x", "y", "tags", "label"]


def test_mutable_default_and_field_order_are_refused() -> None:
    with pytest.raises(ValueError, match="default_factory"):

        @record
        class Bad:
            items: list[str] = []

    with pytest.raises(TypeError, match="without a default follows"):

        @record
        class Order:
            a: int = 1
            b: int

    assert Resource(1, 0, 128) == Resource(cpu=1, gpu=0, memMB=128)


def test_import_torchx_runner_stays_light() -> None:
    code = "import sys, torchx.runner; print(sorted({'dataclasses', 'inspect', 'typing', 're', 'ast', 'threading'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_deep_copy_copies_every_container_and_record() -> None:
    class MyRole(Role):
        pass

    @dataclasses.dataclass(slots=True)
    class Slotted:
        items: list[int]

    original = AppDef("a", roles=[MyRole(name="r", image="i", env={"A": "1"}, args=["x"])], metadata={"m": "v"})
    original.roles[0].metadata["extra"] = Slotted([1])
    copied = deep_copy(original)
    assert copied == original
    assert type(copied.roles[0]) is MyRole
    copied.roles[0].env["B"] = "2"
    copied.roles[0].args.append("y")
    copied.roles[0].metadata["extra"].items.append(2)
    copied.metadata["n"] = "w"
    assert original.roles[0].env == {"A": "1"}
    assert original.roles[0].args == ["x"]
    assert original.roles[0].metadata["extra"].items == [1]
    assert original.metadata == {"m": "v"}


def test_the_first_instance_compiles_the_init() -> None:
    @record
    class Counted:
        """Counts __post_init__ calls."""

        a: int
        b: str = "b"
        items: list[int] = field(default_factory=list)

        def __post_init__(self) -> None:
            self.seen = True

    assert is_lazy(Counted.__dict__["__init__"])
    made = [Counted(i) if i % 2 else Counted(a=i, b="x", items=[i]) for i in range(20)]
    assert not is_lazy(Counted.__dict__["__init__"])  # compiled by the first call
    assert Counted.__init__.__qualname__.endswith("Counted.__init__")
    for i, c in enumerate(made):
        assert c == (Counted(i) if i % 2 else Counted(i, "x", [i]))
        assert c.seen
    assert made[1].items is not made[3].items
    with pytest.raises(TypeError):
        Counted()  # type: ignore[call-arg]


def test_type_hints_of_the_job_model_resolve() -> None:
    import typing

    from torchx import specs
    from torchx.schedulers import api as scheduler_api
    from torchx.tracker import api as tracker_api

    classes = [specs.AppDef, specs.Role, specs.Resource, specs.AppStatus, specs.RoleStatus, specs.ReplicaStatus]
    classes += [specs.BindMount, specs.VolumeMount, specs.DeviceMount, specs.Workspace, specs.macros.Values]
    classes += [scheduler_api.DescribeAppResponse, scheduler_api.ListAppResponse, tracker_api.AppRun]
    for cls in classes:
        hints = typing.get_type_hints(cls)
        assert set(hints) >= {f.name for f in fields_of(cls)}, cls
    assert typing.get_type_hints(specs.Role)["mounts"] == list[specs.BindMount | specs.VolumeMount | specs.DeviceMount]


def test_a_list_response_compares_and_hashes_on_torchx_0_7s_fields() -> None:
    """``ListAppResponse(app_id=..., state=...) in scheduler.list()``, as TorchX 0.7's tests and
    users write it, holds though our schedulers also fill in the name and the times."""
    from torchx.schedulers.api import ListAppResponse
    from torchx.specs import AppState

    ours = ListAppResponse("a-1", AppState.SUCCEEDED, name="a", submitted=1.0, started=2.0, ended=3.0)
    theirs = ListAppResponse(app_id="a-1", state=AppState.SUCCEEDED)
    assert theirs in [ours] and hash(theirs) == hash(ours)
    assert ListAppResponse("a-1", AppState.FAILED) != ours
    assert ListAppResponse("a-1", AppState.SUCCEEDED, app_handle="local_cwd://s/a-1") != ours


@record(frozen=True)
class Frozen:
    """Immutable."""

    name: str
    size: int = 1
    sizes: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", frozenset(self.sizes))


def test_frozen_records_are_immutable_hashable_and_read_as_tuples() -> None:
    f = Frozen("a", sizes=[1, 2])  # type: ignore[arg-type]
    assert f.sizes == frozenset({1, 2})
    assert type(f.sizes) is frozenset  # normalized by __post_init__
    with pytest.raises(FrozenInstanceError, match="Frozen is frozen: cannot assign 'name'"):
        f.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete 'size'"):
        del f.size  # type: ignore[misc]
    assert hash(f) == hash(Frozen("a", 1, frozenset({1, 2})))
    assert len({f, Frozen("a", sizes={2, 1})}) == 1  # type: ignore[arg-type]
    name, size, sizes = f
    assert (name, size, sizes) == ("a", 1, frozenset({1, 2}))
    assert list(f) == ["a", 1, frozenset({1, 2})]
    assert f == ("a", 1, frozenset({1, 2}))
    assert ("a", 1, frozenset({1, 2})) == f
    assert f != ("a", 1)
    assert (f[0], f[-1], f[:2], len(f)) == ("a", frozenset({1, 2}), ("a", 1), 3)
    assert hash(f) == hash(("a", 1, frozenset({1, 2})))  # equal to its tuple, so hashed as it
    assert dataclasses.fields(f)[0].name == "name"
    assert dataclasses.replace(f, size=3).size == 3
    assert dataclasses.asdict(f)["name"] == "a"
    assert replace(f, name="z") == Frozen("z", 1, frozenset({1, 2}))
    assert copy.deepcopy(f) == f
    assert pickle.loads(pickle.dumps(f)) == f
    assert deep_copy(f) == f
    assert Frozen.__dataclass_params__.frozen  # the dataclasses view says frozen too


def test_a_subclass_made_first_compiles_its_record_bases_init() -> None:
    @record
    class Base:
        """A base."""

        a: int

    class Plain(Base):
        """Not a record itself."""

    assert Plain(1).a == 1
    assert not is_lazy(Base.__dict__["__init__"])
    assert Base(2).a == 2


def test_fields_are_exactly_the_annotated_names() -> None:
    @record
    class WithConstant:
        """A class constant is written without an annotation."""

        LIMIT = 3
        a: int = 1

    assert [f.name for f in fields_of(WithConstant)] == ["a"]
    assert WithConstant().LIMIT == 3


def test_runner_events_are_dataclasses_as_upstream_and_round_trip_as_json() -> None:
    from torchx.runner.events import SourceType, TorchxEvent

    event = TorchxEvent("session", "local_cwd", "run", app_id="a1", source=SourceType.EXTERNAL)
    assert dataclasses.asdict(event)["app_id"] == "a1"
    assert dataclasses.replace(event, api="wait").api == "wait"
    assert TorchxEvent.deserialize(event.serialize()) == event
    assert '"source": "EXTERNAL"' in str(event)


def test_a_lazy_init_fetched_before_another_thread_compiled_it_still_works() -> None:
    """Two threads making a class's first instances at once: one fetched the lazy ``__init__``,
    the other compiled the class's own meanwhile; the first must still build its instance (it
    raised StopIteration: a log thread of ``torchx run`` lost a replica's output)."""

    @record(frozen=True)
    class Raced:
        a: int
        b: str = "x"

    stale = Raced.__dict__["__init__"]  # what the slower thread fetched
    assert tuple(Raced(1)) == (1, "x")  # the faster thread compiles it
    assert Raced.__dict__["__init__"] is not stale
    made = object.__new__(Raced)
    stale(made, 2)
    assert tuple(made) == (2, "x")


def is_lazy(init: object) -> bool:
    """True for a record class's ``__init__`` that compiles the class's own at its first call."""
    return getattr(init, "__record_lazy__", False) is True
