"""``torchx cancel APP_HANDLE`` and ``torchx delete APP_HANDLE``."""

from __future__ import annotations

import argparse
import sys

from torchx.cli.cmd_base import SubCommand
from torchx.specs.handles import UnknownAppException


class _AppAction(SubCommand):
    """A verb that acts on one existing app (``runner.<action>(handle)``)."""

    action = ""
    done = ""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import get_runner

        with get_runner() as runner:
            scheduler, app_id = runner.resolve(args.app_handle)
            if not scheduler.exists(app_id):  # not describe: an app whose record is damaged can still be deleted
                raise UnknownAppException(args.app_handle)
            getattr(runner, self.action)(args.app_handle)
        print(f"{self.done} {args.app_handle}", file=sys.stderr)


class CmdCancel(_AppAction):
    """Stops an app; its record stays for status, describe and logs."""

    action, done = "cancel", "cancelled"


class CmdDelete(_AppAction):
    """Stops an app and removes everything the scheduler keeps of it."""

    action, done = "delete", "deleted"
