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
import inspect
import typing
from collections.abc import Callable
from typing import Any, NamedTuple, Union

from torchx.specs.file_linter import get_fn_docstring
from torchx.specs.roles import AppDef
from torchx.util.help_format import HelpFormatter

_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}


class ComponentArgError(ValueError):
    """The arguments given to a component are wrong (unknown, missing, or of the wrong type)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        raise ComponentArgError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> typing.NoReturn:
        if message:
            raise ComponentArgError(message.strip())
        raise SystemExit(status)


class ComponentArgs(NamedTuple):
    """Arguments split the way a component function takes them."""

    positional_args: dict[str, Any]
    var_args: list[str]
    kwargs: dict[str, Any]


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is Union or type(tp).__name__ == "UnionType":
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(args) < len(typing.get_args(tp)):
            return args[0], True
    return tp, False


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
        return typing.cast(Callable[[str], Any], tp)
    return str


def to_list(value: str, item: Callable[[str], Any] = str) -> list[Any]:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` (each converted by ``item``); ``""`` -> ``[]``."""
    if not value.strip():
        return []
    return [item(part.strip()) for part in value.split(",")]


def to_dict(arg: str) -> dict[str, str]:
    """``"k1=v1,k2=v2"`` -> dict. Pairs are split at the last ``,``/``;`` before each ``key=``;
    quotes (``'`` or ``"``) protect ``=``, ``,`` and ``;`` inside keys and values."""
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
    for i, piece in enumerate(pieces[1:], start=1):
        last = i == len(pieces) - 1
        if last:
            value, next_key = piece, ""
        else:
            cut = max(piece.rfind(","), piece.rfind(";"))
            if cut < 0:
                raise ValueError(f"expected ',' or ';' between pairs in {arg!r}")
            value, next_key = piece[:cut], piece[cut + 1 :]
        if not key:
            raise ValueError(f"empty key in {arg!r}")
        out[key] = value.strip()
        key = next_key.strip()
    return out


def _decoder(tp: Any) -> Callable[[str], Any]:
    inner, optional = _unwrap_optional(tp)
    origin = typing.get_origin(inner)
    if origin in (list, typing.List):
        (item,) = typing.get_args(inner) or (str,)
        item_fn = _primitive(item)

        def decode_list(v: str) -> Any:
            return None if optional and not v else to_list(v, item_fn)

        return decode_list
    if origin in (dict, typing.Dict):
        key_tp, val_tp = typing.get_args(inner) or (str, str)
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
    if tp is inspect.Parameter.empty:
        return "str"
    return getattr(tp, "__name__", None) if typing.get_origin(tp) is None else str(tp).replace("typing.", "")  # type: ignore[return-value]


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception:
        return {k: v for k, v in getattr(fn, "__annotations__", {}).items() if not isinstance(v, str)}


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
    fn: Callable[..., Any], cmpnt_defaults: dict[str, str] | None = None, prog: str | None = None
) -> argparse.ArgumentParser:
    description, param_help = get_fn_docstring(fn)
    parser = _Parser(
        prog=prog or getattr(fn, "__name__", "component"),
        description=description,
        add_help=False,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--help", action="help", help="show this help message and exit")
    hints = _hints(fn)
    defaults = cmpnt_defaults or {}
    for name, param in inspect.signature(fn).parameters.items():
        tp = hints.get(name, param.annotation)
        help_text = param_help.get(name, " ").strip()
        if param.kind == inspect.Parameter.VAR_POSITIONAL:
            parser.add_argument(name, nargs=argparse.REMAINDER, help=help_text or "arguments")
            continue
        if param.kind == inspect.Parameter.VAR_KEYWORD:
            raise TypeError(f"component {parser.prog}: **{name} is not supported")
        decode = _named(_decoder(tp), _type_name(tp))
        flags = [f"--{name}"] + ([f"-{name}"] if len(name) == 1 else [])
        kwargs: dict[str, Any] = {"dest": name, "type": decode}
        if name in defaults:
            kwargs["default"] = decode(defaults[name])
        elif param.default is not inspect.Parameter.empty:
            kwargs["default"] = param.default
        else:
            kwargs["required"] = True
        if _unwrap_optional(tp)[0] is bool:
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
    params = inspect.signature(cmpnt_fn).parameters
    varargs = next((n for n, p in params.items() if p.kind == inspect.Parameter.VAR_POSITIONAL), None)
    config = dict(config or {})
    parser = _create_parser(cmpnt_fn, cmpnt_defaults, prog)
    if config:
        for action in parser._actions:
            if action.dest in config:
                action.required = False
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
    hints = _hints(cmpnt_fn)
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
    for name, param in inspect.signature(cmpnt_fn).parameters.items():
        value = getattr(ns, name)
        if param.kind == inspect.Parameter.VAR_POSITIONAL:
            var_args = value
        elif param.kind == inspect.Parameter.KEYWORD_ONLY:
            kwargs[name] = value
        else:
            positional[name] = value
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
