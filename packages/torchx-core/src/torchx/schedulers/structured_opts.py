"""Run options declared as a dataclass (or a :func:`torchx.util.record.record`): fields are
options, attribute docstrings their help.

Usage::

    @dataclass
    class MyOpts(StructuredOpts):
        cluster: str = "default"
        \"\"\"Cluster to submit to.\"\"\"
        mail_user: str | None = field(default=None, metadata={"cfg_key": "mail-user"})
        \"\"\"Who gets mail.\"\"\"
        queue: str | None = field(default=None, metadata={"aliases": ("lsf_queue",)})
        \"\"\"Also accepted under another name (``aliases``).\"\"\"

    MyOpts.as_runopts()          # runopts with cluster, mail-user
    opts = MyOpts.from_cfg(cfg)  # typed access: opts.cluster
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

from torchx.specs.runopts import CfgVal, InvalidRunConfigException, runopts
from torchx.util.annotations import type_hints, union_members
from torchx.util.record import MISSING, Field, declares_fields, fields_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _field_key(f: Field) -> str:
    return str(f.metadata.get("cfg_key", f.name))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _opt_type(tp: Any) -> tuple[Any, bool]:
    """(runopts type, is optional) for a field annotation."""
    members, optional = union_members(tp)
    tp = members[0] if len(members) == 1 else str  # a union of several types is read as text
    origin = getattr(tp, "__origin__", None)  # list for list[str] and typing.List[str]
    if origin is list or tp is list:
        return list[str], optional
    if origin is dict or tp is dict:
        return dict[str, str], optional
    return tp, optional


@functools.cache
def _attribute_docs(cls: type) -> dict[str, str]:
    """Field name -> the docstring written right below the field in the class body."""
    import ast
    import inspect
    import itertools
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, StructuredOpts) or not declares_fields(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, nxt in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return docs


class StructuredOpts(Mapping[str, CfgVal]):
    """Base class for run options declared as a ``@dataclass``; also a read-only mapping."""

    @classmethod
    def as_runopts(cls) -> runopts:
        """The :class:`runopts` these fields declare (a fresh object the caller may extend)."""
        opts = runopts()
        opts.update(_declared_opts(cls))
        return opts

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, CfgVal]) -> Any:
        """An instance from a cfg mapping (keys may be the cfg key, the field name or its camelCase)."""
        kwargs: dict[str, Any] = {}
        for f in fields_of(cls):
            for key in (_field_key(f), f.name, _camel(f.name), *f.metadata.get("aliases", ())):
                if key in cfg and cfg[key] is not None:
                    kwargs[f.name] = cfg[key]
                    break
        return cls(**kwargs)

    def _items(self) -> dict[str, Any]:
        return {_field_key(f): getattr(self, f.name) for f in fields_of(self)}

    def check_single_lines(self) -> None:
        """Checks that every text option is one non-empty line (what a batch script or a
        command-line flag can carry).

        Raises:
            InvalidRunConfigException: the option and its value
        """
        for key, value in self._items().items():
            if isinstance(value, str) and (not value.strip() or any(c in value for c in "\n\r\0")):
                raise InvalidRunConfigException(
                    f"run option {key!r} must be a non-empty single line, got {value!r}", key
                )

    def __getitem__(self, key: str) -> CfgVal:
        items = self._items()
        if key not in items:
            raise KeyError(key)
        value: CfgVal = items[key]
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __or__(self, other: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        return {**dict(self), **dict(other)}


def _field_doc(cls: type, name: str) -> str:
    return _attribute_docs(cls).get(name, "")


@functools.cache
def _declared_opts(cls: type[StructuredOpts]) -> runopts:
    """The options of a StructuredOpts class, computed once per class (do not mutate)."""
    hints = type_hints(cls)
    opts = runopts()
    for f in fields_of(cls):
        tp, optional = _opt_type(hints[f.name])
        has_default = not f.required
        default = f.default if f.default is not MISSING else f.default_factory() if not f.required else None
        key = _field_key(f)
        aliases = [a for a in {f.name, _camel(f.name)} if a != key] + list(f.metadata.get("aliases", ()))
        opts.add(
            key,
            type_=tp,
            help=str(f.metadata["help"]) if "help" in f.metadata else functools.partial(_field_doc, cls, f.name),
            default=default,
            required=not has_default and not optional,
            aliases=aliases,
        )
    return opts


def typed_dict(cls: type[StructuredOpts], name: str, module: str) -> Any:
    """TorchX's form of ``cls``: a ``TypedDict`` (``total=False``) called ``name`` with one key
    per run option (the cfg key, e.g. ``mail-user``) typed as the field.

    TorchX declares each scheduler's run options this way (``AWSBatchOpts``, ``SlurmOpts`` ...),
    so user code builds them as dicts, ``Opts({"queue": "q"})`` or ``Opts(queue="q")``, and
    passes them as ``cfg``. ``module`` is the module the type is published in (its
    ``__module__``, for pickling and reprs).
    """
    from typing import TypedDict

    hints = type_hints(cls)
    keys = {key: hints[f.name] for f in fields_of(cls) for key in (_field_key(f), *f.metadata.get("aliases", ()))}
    made: Any = TypedDict(name, keys, total=False)  # type: ignore[misc]  # name is a variable
    made.__module__ = module
    made.__doc__ = (
        "The run options of this scheduler as a dict (keys as ``torchx runopts`` lists them);"
        f" see {cls.__module__}.{cls.__qualname__}."
    )
    return made
