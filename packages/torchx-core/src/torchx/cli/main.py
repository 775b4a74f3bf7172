"""``torchx``: the CLI shell. Verbs come from a builtin table and from plugins; only the
invoked verb's module is imported."""

from __future__ import annotations

import os
import sys

from torchx.cli import verbs
from torchx.cli.verbs import BUILTIN_COMMANDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

DESCRIPTION = """\
torchx: define a training job once, launch it anywhere.

  torchx run -s local_cwd utils.echo --msg hello   run a builtin component
  torchx status local_cwd://torchx/echo-abc123    see how it is doing
  torchx run utils.python --help                  a component's arguments
"""


def _debug_enabled(argv: list[str]) -> bool:
    """``TORCHX_DEBUG`` set, or ``-v``/``--verbose`` given before the verb (what follows the
    verb belongs to it, and after a component name to the component)."""
    at = _verb_index(argv)
    torchx_args = argv[:at] if at is not None else argv
    return bool(os.environ.get("TORCHX_DEBUG")) or "--verbose" in torchx_args or "-v" in torchx_args


def _verb_index(argv: list[str]) -> int | None:
    """Where the verb is in ``argv`` (the first argument that is neither an option nor its value)."""
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("--log_level", "--log-level"):
            skip = True
            continue
        if arg.startswith("-"):
            continue
        return i
    return None


def _find_verb(argv: list[str]) -> str | None:
    at = _verb_index(argv)
    return None if at is None else argv[at]


def _make_parser(
    commands: dict[str, tuple[str, str]], only: str | None = None
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser; with ``only``, the sub-parser of that verb alone (every verb is
    listed, for ``--help``, when none is given)."""
    import argparse

    from torchx.util.help_format import HelpFormatter

    # no abbreviations of the global options: `run --log` must not match `--log_level`/`--log-level`
    # (a verb's own options may be abbreviated, as in TorchX: `run --dry`)
    class Parser(argparse.ArgumentParser):
        """Usage errors as one line naming the verb's ``--help`` (not argparse's usage block)."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")

    # the verbs' parsers are of the same class (argparse's add_subparsers default)
    parser = Parser(prog="torchx", description=DESCRIPTION, formatter_class=HelpFormatter, allow_abbrev=False)
    parser.add_argument("--version", action=_version_action(), nargs=0, help="show the version and exit")
    parser.add_argument(
        "--log_level",
        "--log-level",
        default=os.environ.get("LOGLEVEL", "WARNING"),
        help="python logging level (default: WARNING, or $LOGLEVEL)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show tracebacks and debug logs (or TORCHX_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="verb", metavar="{" + ",".join(commands) + "}")
    chosen = {only: commands[only]} if only else commands
    subparsers: dict[str, argparse.ArgumentParser] = {
        # abbreviations of a verb's options are expanded by torchx.cli.abbrev, which stops at a component
        name: sub.add_parser(name, help=text, description=text, formatter_class=HelpFormatter, allow_abbrev=False)
        for name, (_, text) in chosen.items()
    }
    return parser, subparsers


def _version_action() -> type:
    import argparse

    class Version(argparse.Action):
        """Prints ``torchx <API level> (torchx-core <release>)``; the release is looked up only here."""

        def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
            from torchx.version import __version__, distribution_version

            print(f"torchx {__version__} (torchx-core {distribution_version()})")
            parser.exit()

    return Version


def run_cli(argv: list[str]) -> int:
    """Parses ``argv`` and runs the verb; returns the exit code (errors propagate)."""
    if argv[:1] == ["__complete"]:  # asked by the completion scripts (torchx.cli.completion)
        from torchx.cli.completion import complete

        return complete(argv[1:])
    commands, note = verbs.commands()
    verb = _find_verb(argv)
    if verb is not None and verb not in commands:
        from torchx.util.suggest import did_you_mean

        print(
            f"torchx: error: unknown command {verb!r}.{did_you_mean(verb, commands)} See `torchx --help`.",
            file=sys.stderr,
        )
        return 2
    parser, subparsers = _make_parser(commands, verb)
    command = None
    if verb is not None:
        command = verbs.load_command(commands[verb][0])
        command.add_arguments(subparsers[verb])
        from torchx.cli.abbrev import expand_abbreviations

        at = (_verb_index(argv) or 0) + 1
        argv = argv[:at] + expand_abbreviations(subparsers[verb], argv[at:])
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the verb's parser, so the message names the verb
        (subparsers[verb] if verb is not None else parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if note and verb != "plugins":  # `torchx plugins` shows every error itself
        print(f"torchx: warning: {note}", file=sys.stderr)
    if command is None:
        parser.print_help()
        return 0
    debug = args.verbose or os.environ.get("TORCHX_DEBUG")
    if debug or args.log_level.upper() != "WARNING":
        import logging

        logging.basicConfig(
            level=logging.DEBUG if debug else args.log_level.upper(),
            format="torchx %(asctime)s %(levelname)s %(message)s",
        )
    result = command.run(args)
    return result if isinstance(result, int) else 0


def error_message(e: BaseException) -> str:
    """The first line of an exception's message (its type name if it has none)."""
    text = str(e.args[0]) if isinstance(e, KeyError) and len(e.args) == 1 else str(e)
    text = text.strip()
    return text.splitlines()[0] if text else type(e).__name__


def _quick_exit_allowed(argv: list[str]) -> bool:
    """True when exiting without interpreter teardown loses nothing: a builtin verb ran (our
    code closes what it opens), no ``atexit`` handler is registered and no non-daemon thread
    is alive. Skipping teardown saves 15-25 ms per CLI call."""
    if _find_verb(argv) not in BUILTIN_COMMANDS:
        return False
    import atexit

    pending = getattr(atexit, "_ncallbacks", None)
    if pending is None or pending() != 0:
        return False
    threading = sys.modules.get("threading")
    return threading is None or all(t.daemon or t is threading.main_thread() for t in threading.enumerate())


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``torchx`` command."""
    from torchx.cli.stop_signals import interrupted_before_start

    # a Ctrl-C Python dropped while the CLI was starting stops the command here; one it drops
    # later (in a finalizer) still stops a later submission or wait
    started = not interrupted_before_start()
    argv = sys.argv[1:] if argv is None else argv
    debug = _debug_enabled(argv)
    try:
        if not started:
            raise KeyboardInterrupt
        code = run_cli(argv)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 1
    except Exception as e:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"torchx: error: {error_message(e)}", file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`torchx ... | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = code or 1
    else:
        if _quick_exit_allowed(argv):
            os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
