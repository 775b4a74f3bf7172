"""``torchx wait APP_HANDLE``: block until an app ends; exit 0 only if it succeeded."""

from __future__ import annotations

import argparse
import sys

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json
from torchx.specs.handles import UnknownAppException


class CmdWait(SubCommand):
    """Waits for an app to end and prints its final status."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")
        subparser.add_argument("--timeout", type=float, default=None, help="give up after this many seconds (exit 2)")
        subparser.add_argument(
            "--interval",
            type=float,
            default=10.0,
            help="longest pause between polls on schedulers that must be polled (default 10 s)",
        )
        subparser.add_argument("--json", action="store_true", help="print JSON")
        subparser.add_argument("--quiet", action="store_true", help="no status line while waiting")

    def run(self, args: argparse.Namespace) -> int:
        import signal

        from torchx.cli.progress import StatusLine
        from torchx.cli.stop_signals import StopSignals
        from torchx.runner import get_runner
        from torchx.specs.status import AppState

        with get_runner() as runner, StopSignals() as stop:
            scheduler, _ = runner.resolve(args.app_handle)
            quiet = args.quiet or args.json
            try:
                stop.catch(signal.SIGINT)  # a Ctrl-C Python would drop still stops the wait (see stop_signals)
                with StatusLine(runner, args.app_handle, local=scheduler.capabilities.attach, quiet=quiet):
                    status = stop.wait(
                        lambda: runner.wait(args.app_handle, wait_interval=args.interval, timeout=args.timeout)
                    )
            except KeyboardInterrupt:  # waiting never owns the app: Ctrl-C leaves it alone
                print(f"torchx: stopped waiting; {args.app_handle} goes on", file=sys.stderr)
                return 130
        if status is None:
            raise UnknownAppException(args.app_handle)
        if not status.is_terminal():
            print(
                f"torchx: timed out after {args.timeout:g} s waiting for {args.app_handle}; it is {status.state.name}",
                file=sys.stderr,
            )
        if args.json:
            print_json({"app_handle": args.app_handle, **status.to_json()})
        else:
            print(status.format())
        if not status.is_terminal():
            return 2
        return 0 if status.state == AppState.SUCCEEDED else 1
