"""Scheduler run options (``runopts``): names, types, defaults, help, and their validation."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping

from torchx.util.suggest import did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The types a run option value may take.
CfgVal = str | int | float | bool | list[str] | dict[str, str] | None

_TRUE = {"true", "1", "yes", "on", "y"}
_FALSE = {"false", "0", "no", "off", "n"}


class InvalidRunConfigException(Exception):
    """A run option is missing, unknown or of the wrong type."""

    def __init__(self, invalid_reason: str, cfg_key: str = "", cfg: Mapping[str, CfgVal] | None = None) -> None:
        super().__init__(invalid_reason)
        self.cfg_key = cfg_key
        self.cfg = dict(cfg or {})


def get_type_name(tp: Any) -> str:
    """A type's name as TorchX prints it: ``int`` -> ``"int"``, ``List[str]`` ->
    ``"typing.List[str]"``, ``list[str]`` -> ``"list[str]"`` (``__name__`` for classes, ``str(tp)``
    for generics, so that a list's element type is named)."""
    if (
        getattr(tp, "__origin__", None) is None
        and getattr(tp, "__module__", None) != "typing"
        and hasattr(tp, "__name__")
    ):
        return str(tp.__name__)
    return str(tp)


# typing.List[str] and list[str] both have __origin__ list; comparing origins keeps typing unimported
def _is_list_type(tp: Any) -> bool:
    return tp is list or getattr(tp, "__origin__", None) is list


def _is_dict_type(tp: Any) -> bool:
    return tp is dict or getattr(tp, "__origin__", None) is dict


def _split(value: str) -> list[str]:
    """The items of a list literal: ``,`` and ``;`` both separate them (as TorchX); empty items are dropped."""
    return [item.strip() for item in value.replace(";", ",").split(",") if item.strip()]


class runopt:
    """One run option: its default, type, whether it is required, its help and aliases.

    ``help`` may be given as a zero-argument callable, called the first time it is read
    (help text that is costly to produce is then only made when it is shown).
    """

    __slots__ = ("_help", "aliases", "default", "is_required", "opt_type")

    def __init__(
        self,
        default: CfgVal,
        opt_type: Any,
        is_required: bool,
        help: str | Callable[[], str],
        aliases: list[str] | None = None,
    ) -> None:
        self.default = default
        self.opt_type = opt_type
        self.is_required = is_required
        self._help = help
        self.aliases: list[str] = list(aliases or [])

    @property
    def help(self) -> str:
        """The option's help text."""
        if callable(self._help):
            self._help = self._help()
        return self._help

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, runopt):
            return NotImplemented
        return (self.default, self.opt_type, self.is_required, self.help, self.aliases) == (
            other.default,
            other.opt_type,
            other.is_required,
            other.help,
            other.aliases,
        )

    def __repr__(self) -> str:
        return (
            f"runopt(default={self.default!r}, opt_type={get_type_name(self.opt_type)}, "
            f"is_required={self.is_required}, help={self.help!r})"
        )

    @property
    def is_type_list_of_str(self) -> bool:
        """True for ``List[str]`` options."""
        return _is_list_type(self.opt_type)

    @property
    def is_type_dict_of_str(self) -> bool:
        """True for ``Dict[str, str]`` options."""
        return _is_dict_type(self.opt_type)

    def cast_to_type(self, value: str) -> CfgVal:
        """Converts the string form of a value (from a CLI or config file) to this option's type.

        Raises:
            ValueError: the string is not a value of this type
        """
        tp = self.opt_type
        if value == "None" and not self.is_required:
            return None
        if tp is bool:
            low = value.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError(f"expected a bool (true/false), got {value!r}")
        if tp is int:
            return int(value)
        if tp is float:
            return float(value)
        if self.is_type_list_of_str:
            return _split(value)
        if self.is_type_dict_of_str:
            out: dict[str, str] = {}
            for pair in _split(value):
                key, sep, val = pair.partition(":")
                if not sep:
                    key, sep, val = pair.partition("=")
                if not sep:
                    raise ValueError(f"expected key:value pairs, got {pair!r}")
                out[key.strip()] = val.strip()
            return out
        return value


def require_non_negative(cfg_key: str, value: float) -> float:
    """``value`` of run option ``cfg_key`` (a duration, a count) if it is not negative.

    Raises:
        InvalidRunConfigException: it is negative
    """
    if value < 0:
        raise InvalidRunConfigException(f"run option {cfg_key!r} must not be negative, got {value!r}", cfg_key)
    return value


class runopts:
    """The run options a scheduler accepts.

    Usage::

        opts = runopts()
        opts.add("cluster_id", type_=int, help="cluster to submit to", required=True)
        opts.add("priority", type_=float, default=0.5, help="job priority")
        cfg = opts.resolve({"cluster_id": 3})   # {"cluster_id": 3, "priority": 0.5}
    """

    def __init__(self) -> None:
        self._opts: dict[str, runopt] = {}

    def __iter__(self) -> Iterator[tuple[str, runopt]]:
        return iter(self._opts.items())

    def __len__(self) -> int:
        return len(self._opts)

    def __contains__(self, key: object) -> bool:
        return key in self._opts

    def __or__(self, other: runopts) -> runopts:
        merged = runopts()
        merged.update(self)
        merged.update(other)
        return merged

    @staticmethod
    def is_type(obj: CfgVal, tp: Any) -> bool:
        """``isinstance`` that also understands ``List[str]`` and ``Dict[str, str]``."""
        if _is_list_type(tp):
            return isinstance(obj, list) and all(isinstance(x, str) for x in obj)
        if _is_dict_type(tp):
            return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in obj.items())
        if tp is float:
            return isinstance(obj, (int, float)) and not isinstance(obj, bool)
        if tp is int:
            return isinstance(obj, int) and not isinstance(obj, bool)
        return isinstance(obj, tp)

    def add(
        self,
        cfg_key: str,
        type_: Any,
        help: str | Callable[[], str],
        default: CfgVal = None,
        required: bool = False,
        aliases: list[str] | None = None,
    ) -> None:
        """Adds an option.

        An empty list or dict is the empty default of a ``List[str]`` or ``Dict[str, str]``
        option alike (as in TorchX), stored as the option's own type.

        Raises:
            ValueError: a required option has a default, or the default is not of ``type_``
        """
        if required and default is not None:
            raise ValueError(f"required option {cfg_key!r} must not have a default (got {default!r})")
        if default in ([], {}) and (_is_list_type(type_) or _is_dict_type(type_)):
            # TorchX accepts either empty container as the default of either container option
            default = [] if _is_list_type(type_) else {}
        elif default is not None and not runopts.is_type(default, type_):
            raise TypeError(f"option {cfg_key!r}: default {default!r} is not of type {get_type_name(type_)}")
        self._opts[cfg_key] = runopt(default, type_, required, help, list(aliases or []))

    def get(self, name: str) -> runopt | None:
        """The option called ``name`` (or with that alias), or None."""
        opt = self._opts.get(name)
        if opt is None:
            opt = next((o for o in self._opts.values() if name in o.aliases), None)
        return opt

    def update(self, other: runopts) -> None:
        """Adds every option of ``other`` (its options win on a clash)."""
        self._opts.update(other._opts)

    def _canonical_key(self, key: str) -> str | None:
        if key in self._opts:
            return key
        for name, opt in self._opts.items():
            if key in opt.aliases:
                return name
        return None

    def resolve(self, cfg: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        """Checks ``cfg`` and returns a new dict with every option, defaults filled in.

        Keys this ``runopts`` does not know are passed through unchanged (one ``cfg`` may
        serve several schedulers). String values given to non-string options are converted
        (as from a config file).

        Raises:
            InvalidRunConfigException: an option is required and missing, or of the wrong type
        """
        resolved: dict[str, CfgVal] = {}
        for key, value in cfg.items():
            name = self._canonical_key(key)
            if name is None:
                resolved[key] = value
                continue
            opt = self._opts[name]
            if value is not None and not runopts.is_type(value, opt.opt_type):
                if isinstance(value, str):
                    try:
                        value = opt.cast_to_type(value)
                    except ValueError as e:
                        raise InvalidRunConfigException(
                            f"run option {name!r} expects {get_type_name(opt.opt_type)}: {e}", name, cfg
                        ) from None
                else:
                    raise InvalidRunConfigException(
                        f"run option {name!r} expects {get_type_name(opt.opt_type)},"
                        f" got {type(value).__name__} ({value!r})",
                        name,
                        cfg,
                    )
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidRunConfigException(
                    f"run option {name!r} expects a finite number, got {value!r}", name, cfg
                )
            resolved[name] = value
        for name, opt in self._opts.items():
            if resolved.get(name) is None:
                if opt.is_required:
                    raise InvalidRunConfigException(
                        f"required run option {name!r} is missing ({opt.help});"
                        f" pass it with -cfg {name}=... or set it in .torchxconfig",
                        name,
                        cfg,
                    )
                resolved[name] = opt.default
        return resolved

    def unknown_keys(self, cfg: Mapping[str, CfgVal] | Iterable[str]) -> list[str]:
        """The keys of ``cfg`` that name no option (nor alias) of this ``runopts``."""
        return [key for key in cfg if self._canonical_key(key) is None]

    def unknown_keys_message(self, keys: Iterable[str], scheduler: str = "") -> str:
        """One line naming unknown option keys, each with a "did you mean" when one is close."""
        where = f" of scheduler {scheduler!r}" if scheduler else ""
        parts = []
        for key in keys:
            hint = did_you_mean(key, self._opts).strip()
            parts.append(f"{key!r}" + (f" ({hint[0].lower()}{hint[1:]})" if hint else ""))
        return f"ignoring unknown run option(s){where}: {', '.join(parts)}; `torchx runopts {scheduler or 'SCHEDULER'}` lists them"

    def parse_cfg_str(self, cfg_str: str) -> tuple[dict[str, CfgVal], list[str]]:
        """Parses ``"k1=v1,k2=a;b"`` into typed values; returns them and the unknown keys (dropped).

        Raises:
            InvalidRunConfigException: a malformed string or value
        """
        out: dict[str, CfgVal] = {}
        unknown: list[str] = []
        for key, raw in _split_cfg_str(cfg_str):
            name = self._canonical_key(key)
            if name is None:
                unknown.append(key)
                continue
            try:
                out[name] = self._opts[name].cast_to_type(raw)
            except ValueError as e:
                raise InvalidRunConfigException(
                    f"run option {name!r} expects {get_type_name(self._opts[name].opt_type)}: {e}", name
                ) from None
        return out, unknown

    def cfg_from_str(self, cfg_str: str) -> dict[str, CfgVal]:
        """Parses ``"k1=v1,k2=a;b;k3='x,y'"`` into typed values.

        ``,`` or ``;`` separate the pairs and the items of a list value; since both do both,
        the last ``,``/``;`` before a ``key=`` is the one between pairs (``FOO=v1,v2,BAR=v3``
        gives ``FOO=["v1", "v2"]``, ``BAR="v3"``). A quoted value is taken as it is.
        Unknown keys are left out of the result, with a logged warning (as upstream TorchX).
        Defaults and required options are not checked: ``opts.resolve(opts.cfg_from_str(s))``.

        Raises:
            InvalidRunConfigException: a malformed string or value
        """
        out, unknown = self.parse_cfg_str(cfg_str)
        if unknown:
            import logging

            logging.getLogger(__name__).warning(self.unknown_keys_message(unknown))
        return out

    def cfg_from_json_repr(self, json_repr: str) -> dict[str, CfgVal]:
        """Parses a JSON object of option values, converting strings as :meth:`cfg_from_str`
        does; keys that name no option are left out (as TorchX does)."""
        import json

        data = json.loads(json_repr)
        out: dict[str, CfgVal] = {}
        for key, value in data.items():
            opt = self.get(key)
            if opt is None:
                continue
            if isinstance(value, str) and opt.opt_type is not str:
                value = opt.cast_to_type(value)
            elif isinstance(value, list):
                value = [str(v) for v in value]
            elif isinstance(value, dict):
                value = {str(k): str(v) for k, v in value.items()}
            out[key] = value
        return out

    def __repr__(self) -> str:
        required = [(k, o) for k, o in self._opts.items() if o.is_required]
        optional = [(k, o) for k, o in self._opts.items() if not o.is_required]
        lines = []
        for key, opt in required + optional:
            tag = "required" if opt.is_required else f"default: {opt.default}"
            lines.append(f"    {key} ({get_type_name(opt.opt_type)}, {tag})")
            if opt.help:
                lines.append(f"        {opt.help}")
        return "\n".join(lines) if lines else "    (no options)"


def _split_cfg_str(cfg_str: str) -> list[tuple[str, str]]:
    """Splits ``k=v,k2=a;b;k3=v3`` into ``(key, value)`` pairs, as TorchX's ``cfg_from_str``.

    ``,`` and ``;`` both separate pairs and both separate the items of a list value; between two
    ``=`` the last ``,``/``;`` is the one between the pairs (``FOO=v1;v2;BAR=v3`` is
    ``FOO=v1;v2`` and ``BAR=v3``). Quoted text (``'...'``/``"..."``) is taken literally, quotes
    removed, so a value may hold any character (``user='x,y=z'``). An ``=`` with no delimiter
    before it since the previous ``=`` belongs to the value (``args=--lr=0.1``).
    """
    # each character with whether it was quoted; the quotes themselves are dropped
    chars: list[tuple[str, bool]] = []
    quote = ""
    for c in cfg_str.strip():
        if quote:
            if c == quote:
                quote = ""
            else:
                chars.append((c, True))
        elif c in "\"'":
            quote = c
        else:
            chars.append((c, False))
    if quote:
        raise InvalidRunConfigException(f"unterminated quote in run options {cfg_str!r}")
    if not chars:
        return []
    # the text between unquoted "="; segment 0 is the first key, the last one the last value
    segments: list[list[tuple[str, bool]]] = [[]]
    for c, quoted in chars:
        if c == "=" and not quoted:
            segments.append([])
        else:
            segments[-1].append((c, quoted))
    if len(segments) < 2:
        raise InvalidRunConfigException(f"malformed run options {cfg_str!r}: expected key=value pairs")

    def text(seg: list[tuple[str, bool]]) -> str:
        return "".join(c for c, _ in seg).strip()

    def valid_key(key: str) -> bool:
        return bool(key) and not any(c in key for c in ",; \"'")

    items: list[tuple[str, str]] = []
    key = text(segments[0])
    if not valid_key(key) or any(q for _, q in segments[0]):
        raise InvalidRunConfigException(f"malformed run option key {key!r} in {cfg_str!r}")
    value: list[tuple[str, bool]] = []
    for seg in segments[1:-1]:
        cut = max((i for i, (c, q) in enumerate(seg) if c in ",;" and not q), default=-1)
        if cut < 0:  # no delimiter since the last "=": that "=" is part of the value
            value += [*seg, ("=", True)]
            continue
        value += seg[:cut]
        next_key = text(seg[cut + 1 :])
        if not valid_key(next_key):
            raise InvalidRunConfigException(f"malformed run option key {next_key!r} in {cfg_str!r}")
        items.append((key, text(value)))
        key, value = next_key, []
    items.append((key, text(value + segments[-1])))
    return items
