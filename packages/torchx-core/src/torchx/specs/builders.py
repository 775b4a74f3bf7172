"""Component materialization: a component function's signature becomes CLI arguments.

Every parameter ``p`` becomes ``--p`` (and ``-p`` when its name is one letter); its type
decides how the string is read:

==========================  ==========================================================
``str`` / ``int`` / ``float``  the value as that type
``bool``                    ``--flag`` alone, or ``--flag true|false`` (also 1/0, yes/no)
``Optional[T]``             as ``T``; an empty string gives ``None``
``List[T]``                 ``a,b,c`` split on ``,``, each item as ``T``
``Dict[K, V]``              ``k1=v1,k2=v2`` (``,`` or ``;`` between pairs; a ``,`` not
                            followed by ``key=`` stays in the value: ``A=1,2,B=3``)
``*args``                   everything after the options (a leading ``--`` is dropped)
==========================  ==========================================================

Defaults, lowest to highest: the function's defaults, ``[component:<name>]`` in
``.torchxconfig`` (passed as ``cmpnt_defaults``), the arguments, then ``config`` (a dict
of values, used by the API's dict form).
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable

from torchx.specs.handles import make_app_handle as make_app_handle  # upstream's module path of these
from torchx.specs.mounts import BindMount as BindMount
from torchx.specs.mounts import DeviceMount as DeviceMount
from torchx.specs.mounts import VolumeMount as VolumeMount
from torchx.specs.mounts import parse_mounts as parse_mounts
from torchx.specs.roles import AppDef
from torchx.util.annotations import type_hints, without_none
from torchx.util.help_format import HelpFormatter
from torchx.util.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}


class ComponentArgError(ValueError):
    """The arguments given to a component are wrong (unknown, missing, or of the wrong type)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            from torchx.util.suggest import did_you_mean

            unknown = next((w for w in message[len(prefix) :].split() if w.startswith("-")), "")
            flags = [f for action in self._actions for f in action.option_strings if f.startswith("--")]
            known = f" (its arguments: {', '.join(f for f in flags if f != '--help')})" if flags else ""
            message += did_you_mean(unknown.partition("=")[0], flags).replace(" Did", ". Did", 1) or known
        raise ComponentArgError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            raise ComponentArgError(message.strip())
        raise SystemExit(status)


@record(frozen=True)
class ComponentArgs:
    """Arguments split the way a component function takes them."""

    positional_args: dict[str, Any]
    var_args: list[str]
    kwargs: dict[str, Any]


#: parameter kinds, as in inspect.Parameter
POSITIONAL, VAR_POSITIONAL, KEYWORD_ONLY, VAR_KEYWORD = "positional", "var_positional", "keyword_only", "var_keyword"
#: a parameter without default or annotation
EMPTY: Any = object()


@record(frozen=True)
class Param:
    """One parameter of a component function."""

    name: str
    kind: str
    default: Any
    annotation: Any


def parameters(fn: Callable[..., Any]) -> list[Param]:
    """The parameters of ``fn`` in signature order (read from its code object for plain functions:
    :mod:`inspect` costs milliseconds to import on the ``torchx run`` path)."""
    annotations = getattr(fn, "__annotations__", {})
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__"):
        import inspect

        kinds: dict[Any, str] = {
            inspect.Parameter.VAR_POSITIONAL: VAR_POSITIONAL,
            inspect.Parameter.KEYWORD_ONLY: KEYWORD_ONLY,
            inspect.Parameter.VAR_KEYWORD: VAR_KEYWORD,
        }
        return [
            Param(
                name,
                kinds.get(p.kind, POSITIONAL),
                EMPTY if p.default is p.empty else p.default,
                EMPTY if p.annotation is p.empty else p.annotation,
            )
            for name, p in inspect.signature(fn).parameters.items()
        ]
    code = fn.__code__
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    kw_defaults = fn.__kwdefaults__ or {}
    first_default = n_pos - len(defaults)
    params = [
        Param(
            name, POSITIONAL, defaults[i - first_default] if i >= first_default else EMPTY, annotations.get(name, EMPTY)
        )
        for i, name in enumerate(names[:n_pos])
    ]
    extra = n_pos + n_kw
    if code.co_flags & 0x04:  # CO_VARARGS: *args comes after the keyword-only names
        params.append(Param(names[extra], VAR_POSITIONAL, EMPTY, annotations.get(names[extra], EMPTY)))
        extra += 1
    params += [
        Param(name, KEYWORD_ONLY, kw_defaults.get(name, EMPTY), annotations.get(name, EMPTY))
        for name in names[n_pos : n_pos + n_kw]
    ]
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        params.append(Param(names[extra], VAR_KEYWORD, EMPTY, annotations.get(names[extra], EMPTY)))
    return params


def _parse_bool(value: str) -> bool:
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _primitive(tp: Any) -> Callable[[str], Any]:
    if tp is bool:
        return _parse_bool
    if tp in (int, float, str):
        return tp  # type: ignore[no-any-return]
    return str


def to_list(value: str, item: Callable[[str], Any] = str) -> list[Any]:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` (each converted by ``item``); ``""`` -> ``[]``."""
    if not value.strip():
        return []
    return [item(part.strip()) for part in value.split(",")]


def to_dict(arg: str) -> dict[str, str]:
    """``"k1=v1,k2=v2"`` -> dict. Pairs are split at the last ``,``/``;`` before each ``key=``, a pair
    at its first ``=`` (``A=x=y`` -> ``{"A": "x=y"}``); quotes (``'`` or ``"``) protect ``=``, ``,`` and ``;`` inside keys and values."""
    tokens: list[str] = []
    current: list[str] = []
    quote = ""
    for c in arg:
        if quote:
            if c == quote:
                quote = ""
            else:
                current.append(c)
        elif c in "\"'":
            quote = c
        elif c == "=":
            tokens.append("".join(current))
            tokens.append("=")
            current = []
        else:
            current.append(c)
    if quote:
        raise ValueError(f"unterminated quote in {arg!r}")
    tokens.append("".join(current))
    # tokens alternate: key '=' value-and-next-key '=' ... value
    out: dict[str, str] = {}
    if len(tokens) == 1:
        if tokens[0].strip():
            raise ValueError(f"expected key=value pairs, got {arg!r}")
        return out
    pieces = tokens[::2]
    key = pieces[0].strip().lstrip(",;").strip()
    value = ""
    for i, piece in enumerate(pieces[1:], start=1):
        if i == len(pieces) - 1:
            value, next_key = value + piece, ""
        else:
            cut = max(piece.rfind(","), piece.rfind(";"))
            if cut < 0:  # no pair ends here: the '=' is part of the value (A=x=y -> A: x=y)
                value += piece + "="
                continue
            value, next_key = value + piece[:cut], piece[cut + 1 :]
        if not key:
            raise ValueError(f"empty key in {arg!r}")
        out[key] = value.strip()
        key, value = next_key.strip(), ""
    return out


def _decoder(tp: Any) -> Callable[[str], Any]:
    inner, optional = without_none(tp)
    origin = getattr(inner, "__origin__", None)  # list for list[str] and typing.List[str]
    if origin is list:
        (item,) = getattr(inner, "__args__", None) or (str,)
        item_fn = _primitive(item)

        def decode_list(v: str) -> Any:
            return None if optional and not v else to_list(v, item_fn)

        return decode_list
    if origin is dict:
        key_tp, val_tp = getattr(inner, "__args__", None) or (str, str)
        kf, vf = _primitive(key_tp), _primitive(val_tp)

        def decode_dict(v: str) -> Any:
            return None if optional and not v else {kf(k): vf(x) for k, x in to_dict(v).items()}

        return decode_dict
    base = _primitive(inner)
    if not optional:
        return base

    def decode_optional(v: str) -> Any:
        return None if v == "" or v == "None" else base(v)

    return decode_optional


def _type_name(tp: Any) -> str:
    if tp is EMPTY:
        return "str"
    return tp.__name__ if type(tp) is type else str(tp).replace("typing.", "")


def _named(decode: Callable[[str], Any], tp_name: str) -> Callable[[str], Any]:
    def convert(value: str) -> Any:
        try:
            return decode(value)
        except ValueError as e:
            detail = str(e)
            builtin = detail.startswith(("invalid literal", "could not convert"))
            raise argparse.ArgumentTypeError(
                f"invalid {tp_name} value {value!r}" + ("" if builtin else f": {detail}")
            ) from None

    convert.__name__ = tp_name
    return convert


def _create_parser(
    fn: Callable[..., Any],
    cmpnt_defaults: dict[str, str] | None = None,
    prog: str | None = None,
    with_help: bool = True,
) -> argparse.ArgumentParser:
    """The component's parser; without ``with_help`` its docstring is not parsed (nothing prints help)."""
    if with_help:
        from torchx.specs.file_linter import get_fn_docstring

        description, param_help = get_fn_docstring(fn)
    else:
        description, param_help = None, {}
    parser = _Parser(
        prog=prog or getattr(fn, "__name__", "component"),
        description=description,
        add_help=False,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--help", action="help", help="show this help message and exit")
    hints = type_hints(fn)
    defaults = cmpnt_defaults or {}
    for param in parameters(fn):
        name, kind, default = param.name, param.kind, param.default
        tp = hints.get(name, param.annotation)
        help_text = param_help.get(name, " ").strip()
        if kind == VAR_POSITIONAL:
            parser.add_argument(name, nargs=argparse.REMAINDER, help=help_text or "arguments")
            continue
        if kind == VAR_KEYWORD:
            raise TypeError(f"component {parser.prog}: **{name} is not supported")
        decode = _named(_decoder(tp), _type_name(tp))
        flags = [f"--{name}"] + ([f"-{name}"] if len(name) == 1 else [])
        kwargs: dict[str, Any] = {"dest": name, "type": decode}
        if name in defaults:
            kwargs["default"] = decode(defaults[name])
        elif default is not EMPTY:
            kwargs["default"] = default
        else:
            kwargs["required"] = True
        if without_none(tp)[0] is bool:
            kwargs.update(nargs="?", const=True)
        shown = "required" if kwargs.get("required") else f"default: {kwargs['default']!r}"
        kwargs["help"] = f"{help_text} ({_type_name(tp)}, {shown})".strip()
        parser.add_argument(*flags, **kwargs)
    return parser


def component_parser(
    fn: Callable[..., Any], cmpnt_defaults: dict[str, str] | None = None, prog: str | None = None
) -> argparse.ArgumentParser:
    """The argument parser of a component (``print_help()`` it for ``--help``)."""
    return _create_parser(fn, cmpnt_defaults, prog)


def parse_args(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    prog: str | None = None,
) -> argparse.Namespace:
    """Parses component arguments into a namespace of typed values.

    Raises:
        ComponentArgError: unknown, missing or mistyped arguments
    """
    cmpnt_args = list(cmpnt_args)
    params = {p.name: p for p in parameters(cmpnt_fn)}
    varargs = next((n for n, p in params.items() if p.kind == VAR_POSITIONAL), None)
    config = dict(config or {})
    parser = _create_parser(cmpnt_fn, cmpnt_defaults, prog, with_help="--help" in cmpnt_args)
    if config:
        for action in parser._actions:
            if action.dest in config:
                action.required = False
    if not varargs and cmpnt_args[:1] == ["--"]:
        # `torchx run COMPONENT -- --arg value` (TorchX's advanced usage): the "--" only ends
        # torchx run's own options; a component without *args takes what follows as its options
        cmpnt_args = cmpnt_args[1:]
    if varargs and "--" in cmpnt_args:
        cut = cmpnt_args.index("--")
        head, tail = cmpnt_args[:cut], cmpnt_args[cut + 1 :]
        ns = parser.parse_args(head)
        setattr(ns, varargs, [*getattr(ns, varargs, []), *tail])
    else:
        ns = parser.parse_args(cmpnt_args)
    if varargs:
        rest = list(getattr(ns, varargs) or [])
        if rest and rest[0] == "--":
            rest = rest[1:]
        setattr(ns, varargs, rest)
    hints = type_hints(cmpnt_fn) if config else {}
    for key, value in config.items():
        if key not in params:
            raise ComponentArgError(f"{parser.prog}: unknown argument {key!r}")
        if key == varargs:
            value = value.split() if isinstance(value, str) else [str(v) for v in value]
        elif isinstance(value, str):
            tp = hints.get(key, str)
            try:
                value = _decoder(tp)(value)
            except ValueError as e:
                raise ComponentArgError(f"{parser.prog}: argument --{key}: {e}") from None
        setattr(ns, key, value)
    return ns


def component_args_from_str(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_args_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> ComponentArgs:
    """Parses arguments and splits them into positional, ``*args`` and keyword values."""
    ns = parse_args(cmpnt_fn, cmpnt_args, cmpnt_args_defaults, config)
    positional: dict[str, Any] = {}
    var_args: list[str] = []
    kwargs: dict[str, Any] = {}
    for param in parameters(cmpnt_fn):
        value = getattr(ns, param.name)
        if param.kind == VAR_POSITIONAL:
            var_args = value
        elif param.kind == KEYWORD_ONLY:
            kwargs[param.name] = value
        else:
            positional[param.name] = value
    return ComponentArgs(positional, var_args, kwargs)


def materialize_appdef(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    prog: str | None = None,
) -> AppDef:
    """Calls a component function with arguments given as CLI strings; returns its AppDef.

    Raises:
        ComponentArgError: the arguments are wrong, or the component rejected them
    """
    args = component_args_from_str(cmpnt_fn, cmpnt_args, cmpnt_defaults, config)
    name = prog or getattr(cmpnt_fn, "__name__", "component")
    try:
        app = cmpnt_fn(*args.positional_args.values(), *args.var_args, **args.kwargs)
    except (ValueError, TypeError) as e:
        raise ComponentArgError(f"{name}: {e}") from e
    if not isinstance(app, AppDef):
        raise ComponentArgError(f"{name}: the component returned {type(app).__name__}, not an AppDef")
    return app
