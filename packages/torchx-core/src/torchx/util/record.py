"""``@record``: dataclass-compatible data classes that cost a plain class to define.

The standard :mod:`dataclasses` costs ~10 ms to import (it imports :mod:`inspect`) and
compiles three functions per class; on the CLI's start-up path that was a third of the
time budget. A record class gets ``__init__`` (positional or keyword arguments, defaults,
``field(default_factory=...)``, ``__post_init__``), ``__repr__``, ``__eq__`` and, with
``unsafe_hash=True``, ``__hash__`` from shared generic methods driven by the class's
field table, so defining one compiles nothing. The first instance made compiles the
class's own ``__init__``, as :mod:`dataclasses` writes it (~0.1 ms, once per class: about 15
classes on the ``torchx run --dryrun`` path).

``@record(frozen=True)`` makes an immutable value: assigning or deleting an attribute
raises :class:`FrozenInstanceError`, instances hash by value, and they read as the tuple
of their values, like the named tuples they replace: they unpack
(``scheduler, session, app_id = parse_app_handle(h)``), index, have a length and compare
equal to that tuple.
``__post_init__`` of a frozen record may normalize a field with ``object.__setattr__``.

Fields are exactly the names the class body annotates (after those of record bases);
class constants are written without an annotation (``typing.ClassVar`` is not looked for).

Records stay dataclasses for every caller: :func:`dataclasses.fields`, ``replace``,
``asdict``, ``astuple`` and ``is_dataclass`` accept them, and ``@dataclass`` may subclass
them. Their ``__dataclass_fields__`` / ``__dataclass_params__`` are built by the real
:mod:`dataclasses` the first time something asks for them.

Example::

    @record
    class Point:
        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list)
"""

from __future__ import annotations

import _thread  # a builtin: threading is not imported at start-up

TYPE_CHECKING = False  # typing is not imported at run time: it is not free either
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    _C = TypeVar("_C", bound=type)
    _T = TypeVar("_T")
else:

    def dataclass_transform(**_: object) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Run-time stand-in for :func:`typing.dataclass_transform` (which only informs type checkers)."""
        return lambda decorated: decorated


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


class FrozenInstanceError(AttributeError):
    """An attribute of a frozen record was assigned or deleted (as :class:`dataclasses.FrozenInstanceError`)."""


#: Marks a field without a default (or without a default factory).
MISSING: Any = _Missing()
_NO_METADATA: Mapping[str, Any] = {}


class Field:
    """One field of a record: its name, annotation, default or default factory, metadata."""

    __slots__ = ("compare", "default", "default_factory", "metadata", "name", "type")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        metadata: Mapping[str, Any] | None = None,
        compare: bool = True,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("a field cannot have both a default and a default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.metadata = metadata if metadata is not None else _NO_METADATA
        #: counted by ``==`` and the hash (as ``dataclasses.field(compare=...)``)
        self.compare = compare

    @property
    def required(self) -> bool:
        """True when the constructor must be given this field."""
        return self.default is MISSING and self.default_factory is MISSING

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING,
          metadata: Mapping[str, Any] | None = None, compare: bool = True) -> Any:  # fmt: skip
    """Declares a record field with a default factory (or a default, or metadata); with
    ``compare=False`` it does not count for ``==`` and the hash."""
    return Field(default, default_factory, metadata, compare)


def _compiled_init(fields: tuple[Field, ...], post_init: bool, frozen: bool) -> Callable[..., None]:
    """An ``__init__`` made for these fields, as :mod:`dataclasses` writes them."""
    namespace: dict[str, Any] = {"_record_missing": MISSING, "_record_set": object.__setattr__}
    params, body = [], []
    for i, f in enumerate(fields):
        if f.required:
            params.append(f.name)
            value = f.name
        elif f.default_factory is not MISSING:
            namespace[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_record_missing")
            value = f"_factory{i}() if {f.name} is _record_missing else {f.name}"
        else:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
            value = f.name
        body.append(f"_record_set(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
    if post_init:
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, namespace)
    init: Callable[..., None] = namespace["__init__"]
    return init


#: held while a record class's ``__init__`` is compiled (two threads making a class's first
#: instances at once compile it once; before, the second found no lazy ``__init__`` left in the
#: class and raised StopIteration, e.g. in one log thread of ``torchx run``)
_compile_lock = _thread.allocate_lock()


def _lazy_init(owner: type) -> Callable[..., None]:
    """``owner``'s ``__init__`` until its first instance is made: compiles the class's own."""
    compiled: list[Callable[..., None]] = []

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not compiled:
            with _compile_lock:
                if not compiled:
                    fields: tuple[Field, ...] = owner.__record_fields__  # type: ignore[attr-defined]
                    init = _compiled_init(fields, hasattr(owner, "__post_init__"), _is_frozen(owner))
                    init.__qualname__ = f"{owner.__qualname__}.__init__"
                    owner.__init__ = init  # type: ignore[misc]
                    compiled.append(init)
        compiled[0](self, *args, **kwargs)

    __init__.__record_lazy__ = True  # type: ignore[attr-defined]
    return __init__


def _is_frozen(cls: type) -> bool:
    return cls.__setattr__ is _frozen_setattr  # type: ignore[comparison-overlap]


def _values(obj: Any) -> tuple[Any, ...]:
    return tuple([getattr(obj, f.name) for f in type(obj).__record_fields__])


def _repr(self: Any) -> str:
    body = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in type(self).__record_fields__)
    return f"{type(self).__qualname__}({body})"


def _compared(obj: Any) -> tuple[Any, ...]:
    return tuple([getattr(obj, name) for name in type(obj).__record_compared__])


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    return _compared(self) == _compared(other)


def _hash(self: Any) -> int:
    return hash(_compared(self))


def _frozen_eq(self: Any, other: object) -> bool:
    if type(other) is tuple:
        return _values(self) == other
    return _eq(self, other)


def _iter(self: Any) -> Any:
    return iter(_values(self))


def _len(self: Any) -> int:
    return len(type(self).__record_fields__)


def _getitem(self: Any, index: Any) -> Any:
    return _values(self)[index]


def _frozen_setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"{type(self).__name__} is frozen: cannot assign {name!r}; use replace()")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"{type(self).__name__} is frozen: cannot delete {name!r}")


class _DataclassMetadata:
    """Class attribute that builds the real dataclasses metadata of a record on first access."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type) -> Any:
        import dataclasses

        fields: tuple[Field, ...] = getattr(owner, "__record_fields__")  # noqa: B009 (set by @record)
        namespace: dict[str, Any] = {"__annotations__": {f.name: f.type for f in fields}}
        for f in fields:
            if not f.required or f.metadata or not f.compare:
                namespace[f.name] = dataclasses.field(
                    default=dataclasses.MISSING if f.default is MISSING else f.default,
                    default_factory=dataclasses.MISSING if f.default_factory is MISSING else f.default_factory,
                    metadata=f.metadata or None,
                    compare=f.compare,
                )
        frozen = _is_frozen(owner)
        unsafe_hash = not frozen and owner.__dict__.get("__hash__") is _hash
        shadow: Any = dataclasses.dataclass(unsafe_hash=unsafe_hash, frozen=frozen)(type(owner.__name__, (), namespace))
        # cached on the record class itself: later accesses are plain attribute reads
        setattr(owner, "__dataclass_fields__", shadow.__dataclass_fields__)  # noqa: B010
        setattr(owner, "__dataclass_params__", shadow.__dataclass_params__)  # noqa: B010
        return getattr(owner, self.attribute)


def _collect_fields(cls: type) -> tuple[Field, ...]:
    fields: dict[str, Field] = {f.name: f for f in getattr(cls, "__record_fields__", ())}
    own_annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (inspect costs ~5 ms to import)
    for name, annotation in own_annotations.items():
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            spec = value
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        else:
            if type(value) in (list, dict, set):
                raise ValueError(
                    f"{cls.__name__}.{name}: mutable default {type(value).__name__}; use field(default_factory=...)"
                )
            spec = Field(default=value)
        spec.name = name
        spec.type = annotation
        fields[name] = spec  # an overridden base field keeps its place, as in dataclasses
    seen_default = ""
    for spec in fields.values():
        if not spec.required:
            seen_default = spec.name
        elif seen_default:
            raise TypeError(f"{cls.__name__}: field {spec.name!r} without a default follows {seen_default!r} with one")
    return tuple(fields.values())


@dataclass_transform(field_specifiers=(field, Field))
def record(cls: _C | None = None, /, *, unsafe_hash: bool = False, frozen: bool = False) -> Any:
    """Makes ``cls`` a data class (see the module docs); ``unsafe_hash=True`` also hashes by value;
    ``frozen=True`` makes instances immutable, hashable by value and unpackable."""

    def wrap(klass: _C) -> _C:
        fields = _collect_fields(klass)
        setattr(klass, "__record_fields__", fields)  # noqa: B010
        setattr(klass, "__match_args__", tuple(f.name for f in fields))  # noqa: B010
        setattr(klass, "__record_compared__", tuple(f.name for f in fields if f.compare))  # noqa: B010
        methods = [("__init__", _lazy_init(klass)), ("__repr__", _repr), ("__eq__", _frozen_eq if frozen else _eq)]
        if frozen:
            methods += [("__setattr__", _frozen_setattr), ("__delattr__", _frozen_delattr)]
            methods += [("__iter__", _iter), ("__len__", _len), ("__getitem__", _getitem)]
        for name, method in methods:
            if name not in klass.__dict__:
                setattr(klass, name, method)
        if "__hash__" not in klass.__dict__ or klass.__dict__["__hash__"] is None:
            klass.__hash__ = _hash if unsafe_hash or frozen else None  # type: ignore[assignment]
        for attribute in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(klass, attribute, _DataclassMetadata(attribute))
        return klass

    return wrap if cls is None else wrap(cls)


def fields_of(class_or_instance: object) -> tuple[Field, ...]:
    """The fields of a record, or of a standard dataclass (as :class:`Field` s), in order."""
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    if "__record_fields__" in cls.__dict__:
        return cls.__record_fields__  # type: ignore[attr-defined,no-any-return]
    import dataclasses

    converted = []
    for f in dataclasses.fields(cls):
        spec = Field(
            default=MISSING if f.default is dataclasses.MISSING else f.default,
            default_factory=MISSING if f.default_factory is dataclasses.MISSING else f.default_factory,
            metadata=f.metadata,
            compare=f.compare,
        )
        spec.name, spec.type = f.name, f.type
        converted.append(spec)
    return tuple(converted)


def declares_fields(cls: type) -> bool:
    """True when ``cls`` itself (not only a base) is a record or a dataclass."""
    return "__record_fields__" in cls.__dict__ or "__dataclass_fields__" in cls.__dict__


def to_dict(obj: object) -> dict[str, Any]:
    """Field name -> value of a record (or dataclass); shallow, unlike :func:`dataclasses.asdict`."""
    return {f.name: getattr(obj, f.name) for f in fields_of(obj)}


def replace(obj: _T, **changes: Any) -> _T:
    """A copy of record (or dataclass) ``obj`` with ``changes`` applied, like :func:`dataclasses.replace`."""
    values = to_dict(obj)
    values.update(changes)
    return type(obj)(**values)


def deep_copy(value: _T) -> _T:
    """A copy of ``value`` in which every record, dataclass, list, dict, set and tuple is copied
    too; other objects (strings, numbers, enums, anything else) are shared, as they are immutable
    or owned by the caller. Cheaper than :func:`copy.deepcopy` and keeps :mod:`copy` unimported."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None)):
        return value
    if kind is list:
        return [deep_copy(v) for v in value]  # type: ignore[attr-defined,return-value]
    if kind is dict:
        return {k: deep_copy(v) for k, v in value.items()}  # type: ignore[attr-defined,return-value]
    if kind in (tuple, set, frozenset):
        return kind(deep_copy(v) for v in value)  # type: ignore[attr-defined,call-arg]
    if any("__record_fields__" in k.__dict__ or "__dataclass_fields__" in k.__dict__ for k in kind.__mro__):
        if not hasattr(value, "__dict__"):  # a slotted dataclass
            import copy

            return copy.deepcopy(value)
        copied = object.__new__(kind)
        copied.__dict__.update({k: deep_copy(v) for k, v in value.__dict__.items()})
        return copied
    return value
