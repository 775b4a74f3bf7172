"""``torchx describe APP_HANDLE``."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json
from torchx.specs.handles import UnknownAppException


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "value") and hasattr(value, "name"):  # enums
        return value.value if isinstance(value.value, str) else value.name
    return value


class CmdDescribe(SubCommand):
    """Prints an app's definition (as submitted, or as the scheduler reconstructs it)."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")
        subparser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import get_runner
        from torchx.util.yaml import dump

        with get_runner() as runner:
            app = runner.describe(args.app_handle)
        if app is None:
            raise UnknownAppException(args.app_handle)
        data = _plain(app)
        if args.json:
            print_json(data)
        else:
            print(dump(data), end="")
