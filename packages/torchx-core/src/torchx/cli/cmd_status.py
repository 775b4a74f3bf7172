"""``torchx status APP_HANDLE``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json
from torchx.specs.handles import UnknownAppException


class CmdStatus(SubCommand):
    """Shows an app's state and its replicas' states."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")
        subparser.add_argument("--roles", default="", help="only these roles (comma-separated)")
        subparser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import get_runner

        roles = [r for r in args.roles.split(",") if r] or None
        with get_runner() as runner:
            status = runner.status(args.app_handle)
        if status is None:
            raise UnknownAppException(args.app_handle)
        if args.json:
            print_json({"app_handle": args.app_handle, **status.to_json(roles)})
        else:
            print(f"{status.state.name}  {args.app_handle}\n" + status.format(roles))
