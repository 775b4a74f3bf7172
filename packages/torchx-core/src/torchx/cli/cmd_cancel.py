"""``torchx cancel APP_HANDLE`` and ``torchx delete APP_HANDLE``."""

from __future__ import annotations

import argparse
import sys

from torchx.cli.cmd_base import SubCommand
from torchx.specs.handles import UnknownAppException


class CmdCancel(SubCommand):
    """Stops an app; its record stays for status, describe and logs."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import get_runner

        with get_runner() as runner:
            if runner.status(args.app_handle) is None:
                raise UnknownAppException(args.app_handle)
            runner.cancel(args.app_handle)
        print(f"cancelled {args.app_handle}", file=sys.stderr)


class CmdDelete(SubCommand):
    """Stops an app and removes everything the scheduler keeps of it."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import get_runner

        with get_runner() as runner:
            if runner.status(args.app_handle) is None:
                raise UnknownAppException(args.app_handle)
            runner.delete(args.app_handle)
        print(f"deleted {args.app_handle}", file=sys.stderr)
