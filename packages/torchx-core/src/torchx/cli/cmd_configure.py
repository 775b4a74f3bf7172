"""``torchx configure``: write a ``.torchxconfig`` template."""

from __future__ import annotations

import argparse
import io
import os
import sys

from torchx.cli.cmd_base import SubCommand


class CmdConfigure(SubCommand):
    """Writes a ``.torchxconfig`` in the current directory with a section per scheduler."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("-s", "--schedulers", default=None, help="comma-separated schedulers (default: all)")
        subparser.add_argument("--print", dest="print_only", action="store_true", help="print instead of writing")
        subparser.add_argument("-a", "--all", action="store_true", help="every option, not only the required ones")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import config

        names = [s for s in (args.schedulers or "").split(",") if s]
        buf = io.StringIO()
        config.dump(buf, names or None, required_only=not args.all)
        if args.print_only:
            print(buf.getvalue(), end="")
            return
        path = os.path.join(os.getcwd(), config.CONFIG_FILE)
        if os.path.exists(path):
            raise FileExistsError(f"{path} exists; use --print and merge by hand")
        with open(path, "w") as f:
            f.write(buf.getvalue())
        print(f"wrote {path}", file=sys.stderr)
