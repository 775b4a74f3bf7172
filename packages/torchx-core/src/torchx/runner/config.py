"""``.torchxconfig``: INI files with defaults for run options, component arguments and CLI flags.

Files read, in order of precedence (a key set in an earlier file wins):

1. ``$TORCHXCONFIG`` if the variable is set: only that file (``TORCHXCONFIG=""``: none);
2. otherwise ``~/.torchxconfig`` (user), then ``./.torchxconfig`` (project).

Explicit values (``-cfg`` on the CLI, ``cfg=`` in the API) beat every file. Sections:

* ``[<scheduler>]``: run options, converted to each option's type (``bool``: true/false,
  yes/no, on/off, 1/0; ``List[str]``: ``;``-separated; ``Dict[str, str]``: ``k:v;k:v``;
  ``None``: no value). Keys the scheduler does not know are skipped with a warning.
* ``[component:<name>]``: component argument defaults
* ``[cli:<verb>]``: CLI defaults (``[cli:run] scheduler=..., component=...``)
* ``[torchx:tracker]`` / ``[tracker:<name>]``: trackers (see :mod:`torchx.tracker`)

Programmatic use, as in TorchX::

    from torchx.runner.config import apply
    cfg = {"log_dir": "/tmp/logs"}          # explicit values win
    apply("local_cwd", cfg, dirs=["/home/bob"])
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from torchx.specs.runopts import CfgVal, get_type_name, runopts

TYPE_CHECKING = False
if TYPE_CHECKING:
    import configparser
    from typing import IO

    from torchx.specs.runopts import runopt

CONFIG_FILE = ".torchxconfig"
CONFIG_PREFIX_DELIM = ":"
ENV_TORCHXCONFIG = "TORCHXCONFIG"
_NONE = "None"

_parsed: dict[tuple[str, int], configparser.ConfigParser] = {}


class ConfigError(ValueError):
    """A ``.torchxconfig`` file is malformed, or holds a value of the wrong type."""


class ConfigNotFoundError(ConfigError, FileNotFoundError):
    """``$TORCHXCONFIG`` names a file that does not exist."""


def _configparser() -> configparser.ConfigParser:
    """The parser for ``.torchxconfig``: keys keep their case; ``%`` is a plain character."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    return parser


def find_configs(dirs: Iterable[str] | None = None) -> list[str]:
    """The config files in effect, highest precedence first.

    ``$TORCHXCONFIG`` alone when set; else ``.torchxconfig`` in each of ``dirs`` that has
    one (default, also for an empty ``dirs``: ``[$HOME, $CWD]``).

    Raises:
        ConfigNotFoundError: ``$TORCHXCONFIG`` names a file that does not exist
    """
    explicit = os.environ.get(ENV_TORCHXCONFIG)
    if explicit is not None:
        if not explicit:
            return []
        if not os.path.isfile(explicit):
            raise ConfigNotFoundError(f"TORCHXCONFIG={explicit} does not exist; unset it or point it at a file")
        return [explicit]
    dirs = list(dirs or ()) or [os.path.expanduser("~"), os.getcwd()]
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
        try:
            with open(path) as f:
                parser = _read(f, path)
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read {path}: {e}") from None
        _parsed[key] = parser
    return parser


def _read(f: IO[str], source: str) -> configparser.ConfigParser:
    import configparser

    parser = _configparser()
    try:
        parser.read_file(f, source=source)
    except configparser.Error as e:
        raise ConfigError(f"malformed {source}, {_what_is_wrong(e)}") from None
    return parser


def _what_is_wrong(e: configparser.Error) -> str:
    """Where a config file is malformed (its line), what is wrong and how to fix it."""
    import configparser

    if isinstance(e, configparser.MissingSectionHeaderError):
        return (
            f"line {e.lineno}: {e.line.strip()!r} comes before any section header;"
            " put settings under one, e.g. [local_cwd] (a scheduler's run options) or [cli:run]"
        )
    if isinstance(e, configparser.ParsingError):
        lineno, line = e.errors[0]
        if line[:1] in "'\"":  # configparser keeps the repr of the line
            import ast

            line = ast.literal_eval(line)
        return (
            f"line {lineno}: {line.strip()!r} is not `key = value`, a [section] header or a comment;"
            " continuation lines of a value must be indented"
        )
    if isinstance(e, configparser.DuplicateSectionError):
        return f"line {e.lineno}: section [{e.section}] appears twice; merge the two"
    if isinstance(e, configparser.DuplicateOptionError):
        return f"line {e.lineno}: {e.option!r} is set twice in section [{e.section}]; keep one"
    first = str(e).strip().splitlines()[0]
    return f"{first}; fix the file's INI syntax ([section] headers, `key = value` lines)"


def _section_name(section: str, prefix: str) -> str | None:
    """``name`` of section ``prefix:name`` (None for other sections, ``prefix:`` and ``:name``)."""
    head, sep, name = section.partition(CONFIG_PREFIX_DELIM)
    return name if sep and head == prefix and name else None


def load_sections(prefix: str, dirs: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """``{name: {key: value}}`` of every ``[prefix:name]`` section (earlier files win per key).

    An empty section gives an empty dict.
    """
    out: dict[str, dict[str, str]] = {}
    for path in find_configs(dirs):
        parser = _parse(path)
        for section in parser.sections():
            name = _section_name(section, prefix)
            if name is not None:
                target = out.setdefault(name, {})
                for key, value in parser.items(section):
                    target.setdefault(key, value)
    return out


def get_configs(prefix: str, name: str, dirs: Iterable[str] | None = None) -> dict[str, str]:
    """``{key: value}`` of section ``[prefix:name]`` (empty if there is none)."""
    return load_sections(prefix, dirs).get(name, {})


def get_config(prefix: str, name: str, key: str, dirs: Iterable[str] | None = None) -> str | None:
    """One value of section ``[prefix:name]``, or None."""
    return get_configs(prefix, name, dirs).get(key)


def _run_opts(scheduler: str) -> runopts:
    """The run options of an installed scheduler (made with session name ``_``)."""
    from torchx.schedulers import get_scheduler_factories

    factories = get_scheduler_factories()
    if scheduler not in factories:
        raise ValueError(
            f"`{scheduler}` is not a registered scheduler. Valid scheduler names: {', '.join(factories) or 'none'}"
        )
    sched = factories[scheduler](session_name="_")
    try:
        return sched.run_opts()
    finally:
        sched.close()


def convert(opt: runopt, value: str) -> CfgVal:
    """A config-file string as a value of ``opt``'s type.

    Raises:
        ValueError: the string is not a value of that type
    """
    if value == _NONE:
        return None
    if opt.is_type_list_of_str:
        return value.split(";")
    return opt.cast_to_type(value)


def fill(scheduler: str, opts: runopts, cfg: dict[str, CfgVal], parser: configparser.ConfigParser, source: str) -> None:
    """Adds the ``[scheduler]`` values of one parsed file to ``cfg`` for keys it lacks."""
    if not parser.has_section(scheduler):
        return
    import logging

    for key, value in parser.items(scheduler):
        if key in cfg:
            continue
        opt = opts.get(key)
        if opt is None:
            from torchx.util.suggest import did_you_mean

            logging.getLogger(__name__).warning(
                "`%s = %s` in the [%s] section of %s is not a run option of scheduler `%s`.%s"
                " Remove it to silence this warning",
                key,
                value,
                scheduler,
                _where(source, scheduler, key),
                scheduler,
                did_you_mean(key, [name for name, _ in opts]),
            )
            continue
        try:
            cfg[key] = convert(opt, value)
        except ValueError as e:
            raise ConfigError(
                f"{_where(source, scheduler, key)} [{scheduler}] {key} = {value}:"
                f" expected {get_type_name(opt.opt_type)} ({e})"
            ) from None


def _where(source: str, section: str, key: str) -> str:
    """``path:line`` of ``key`` in ``[section]`` of the file ``source`` (just the path if not found)."""
    try:
        with open(source) as f:
            lines = f.read().splitlines()
    except OSError:
        return source
    current = None
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if text.startswith("[") and text.endswith("]"):
            current = text[1:-1].strip()
        elif current == section and text.partition("=")[0].partition(":")[0].strip().lower() == key:
            return f"{source}:{number}"
    return source


def apply_files(scheduler: str, opts: runopts, cfg: dict[str, CfgVal], dirs: Iterable[str] | None = None) -> None:
    """:func:`apply` with the scheduler's run options already at hand."""
    for path in find_configs(dirs):
        fill(scheduler, opts, cfg, _parse(path), path)


def apply(scheduler: str, cfg: dict[str, CfgVal], dirs: Iterable[str] | None = None) -> None:
    """Adds the ``[scheduler]`` run options of the config files to ``cfg``, converted to each
    option's type; keys already in ``cfg`` are kept, and earlier files win.

    Raises:
        ValueError: ``scheduler`` is not installed
        ConfigError: a file is malformed or a value is not of its option's type
    """
    apply_files(scheduler, _run_opts(scheduler), cfg, dirs)


def load(scheduler: str, f: IO[str], cfg: dict[str, CfgVal]) -> None:
    """Adds the ``[scheduler]`` run options of the open INI file ``f`` to ``cfg`` (keys
    already in ``cfg`` are kept), converted to each option's type."""
    source = getattr(f, "name", "<config>")
    fill(scheduler, _run_opts(scheduler), cfg, _read(f, str(source)), str(source))


def _fixme(opt: runopt, max_len: int = 60) -> str:
    text = f"#FIXME:({get_type_name(opt.opt_type)}) {opt.help}"
    return text if len(text) <= max_len else f"{text[:max_len]}..."


def _format_default(opt: runopt) -> str:
    value = opt.default
    if isinstance(value, list):
        return ";".join(value) if value else _NONE
    if isinstance(value, dict):
        return ";".join(f"{k}:{v}" for k, v in value.items()) if value else _NONE
    return str(value)


def dump(f: IO[str], schedulers: Iterable[str] | None = None, required_only: bool = False) -> None:
    """Writes a ``.torchxconfig`` template: a ``[name]`` section per scheduler.

    No ``schedulers`` (None or empty) means every installed one; a scheduler whose
    dependencies are missing is left out. Required options are written as
    ``#FIXME:(type) help`` placeholders, optional ones with their default (unless
    ``required_only``), so a scheduler without required options gets an empty section.

    Raises:
        ValueError: a named scheduler is not installed
    """
    from torchx.schedulers import get_scheduler_factories

    names = list(schedulers or ()) or list(get_scheduler_factories())
    parser = _configparser()
    for name in names:
        try:
            opts = _run_opts(name)
        except ModuleNotFoundError:
            continue
        parser.add_section(name)
        for key, opt in opts:
            if opt.is_required:
                parser.set(name, key, _fixme(opt))
            elif not required_only:
                parser.set(name, key, _format_default(opt))
    parser.write(f, space_around_delimiters=True)
