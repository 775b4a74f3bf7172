"""``.torchxconfig``: INI files with defaults for run options, component arguments and CLI flags.

Files read, in order of precedence (a key set in an earlier file wins):

1. ``$TORCHXCONFIG`` if the variable is set: only that file (``TORCHXCONFIG=""``: none);
2. otherwise ``~/.torchxconfig`` (user), then ``./.torchxconfig`` (project).

Explicit values (``-cfg`` on the CLI, ``cfg=`` in the API) beat every file. Sections:

* ``[<scheduler>]``: run options (``list`` values ``;``-separated, ``dict`` ``k:v;k:v``)
* ``[component:<name>]``: component argument defaults
* ``[cli:<verb>]``: CLI defaults (``[cli:run] scheduler=..., component=...``)
* ``[torchx:tracker]`` / ``[tracker:<name>]``: trackers (see :mod:`torchx.tracker`)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from torchx.specs.runopts import CfgVal, get_type_name, runopts

TYPE_CHECKING = False
if TYPE_CHECKING:
    import configparser
    from typing import IO, Any

CONFIG_FILE = ".torchxconfig"
ENV_TORCHXCONFIG = "TORCHXCONFIG"

_parsed: dict[tuple[str, int], configparser.ConfigParser] = {}


class ConfigError(Exception):
    """A ``.torchxconfig`` file is malformed or missing."""


def find_configs(dirs: Iterable[str] | None = None) -> list[str]:
    """The config files in effect, highest precedence first.

    Raises:
        ConfigError: ``$TORCHXCONFIG`` names a file that does not exist
    """
    explicit = os.environ.get(ENV_TORCHXCONFIG)
    if explicit is not None:
        if not explicit:
            return []
        if not os.path.isfile(explicit):
            raise ConfigError(f"TORCHXCONFIG={explicit} does not exist; unset it or point it at a file")
        return [explicit]
    if dirs is None:
        dirs = [os.path.expanduser("~"), os.getcwd()]
    found: list[str] = []
    for d in dirs:
        path = os.path.abspath(os.path.join(d, CONFIG_FILE))
        if path not in found and os.path.isfile(path):
            found.append(path)
    return found


def _parse(path: str) -> configparser.ConfigParser:
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    key = (path, mtime)
    parser = _parsed.get(key)
    if parser is None:
        import configparser

        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            with open(path) as f:
                parser.read_file(f, source=path)
        except configparser.Error as e:
            first = str(e).strip().splitlines()[0]
            raise ConfigError(f"malformed {path}: {first}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read {path}: {e}") from None
        _parsed[key] = parser
    return parser


def load_sections(prefix: str, dirs: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """``{name: {key: value}}`` of every ``[prefix:name]`` section (earlier files win per key)."""
    out: dict[str, dict[str, str]] = {}
    for path in find_configs(dirs):
        parser = _parse(path)
        for section in parser.sections():
            head, sep, name = section.partition(":")
            if sep and head == prefix:
                target = out.setdefault(name, {})
                for key, value in parser.items(section):
                    target.setdefault(key, value)
    return out


def get_configs(prefix: str, name: str, dirs: Iterable[str] | None = None) -> dict[str, str]:
    """``{key: value}`` of section ``[prefix:name]``."""
    return _section(f"{prefix}:{name}", dirs)


def get_config(prefix: str, name: str, key: str, dirs: Iterable[str] | None = None) -> str | None:
    """One value of section ``[prefix:name]``, or None."""
    return get_configs(prefix, name, dirs).get(key)


def _section(section: str, dirs: Iterable[str] | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in find_configs(dirs):
        parser = _parse(path)
        if parser.has_section(section):
            for key, value in parser.items(section):
                out.setdefault(key, value)
    return out


def apply(scheduler: str, cfg: dict[str, CfgVal], dirs: Iterable[str] | None = None) -> None:
    """Fills ``cfg`` with the ``[scheduler]`` section's values for keys ``cfg`` lacks."""
    for key, value in _section(scheduler, dirs).items():
        if cfg.get(key) is None:
            cfg[key] = None if value == "None" else value


def load(scheduler: str, f: IO[str], cfg: dict[str, CfgVal]) -> None:
    """Fills ``cfg`` from the ``[scheduler]`` section of the open config file ``f``."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_file(f)
    if parser.has_section(scheduler):
        for key, value in parser.items(scheduler):
            if cfg.get(key) is None:
                cfg[key] = None if value == "None" else value


def _format_value(value: Any) -> str:
    if isinstance(value, list):
        return ";".join(str(v) for v in value)
    if isinstance(value, dict):
        return ";".join(f"{k}:{v}" for k, v in value.items())
    return str(value)


def dump(f: IO[str], schedulers: Mapping[str, runopts], required_only: bool = False) -> None:
    """Writes a config template with a section per scheduler.

    Required options without a value are written as ``#FIXME:(type) help`` lines.
    """
    for name, opts in sorted(schedulers.items()):
        lines = []
        for key, opt in opts:
            if required_only and not opt.is_required:
                continue
            if opt.is_required:
                lines.append(f"{key} = #FIXME:({get_type_name(opt.opt_type)}) {opt.help}")
            elif opt.default is not None:
                lines.append(f"{key} = {_format_value(opt.default)}")
            else:
                lines.append(f"#{key} = ")
        f.write(f"[{name}]\n")
        for line in lines:
            f.write(line + "\n")
        f.write("\n")
