"""``torchx builtins [--print NAME] [--json]``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json


class CmdBuiltins(SubCommand):
    """Lists the components of the installed component packages (read from source, not imported)."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "--print", dest="print_name", default=None, metavar="NAME", help="print the source of component NAME"
        )
        subparser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.specs.finder import get_builtin_source, get_components

        if args.print_name:
            print(get_builtin_source(args.print_name), end="")
            return
        components = get_components()
        if args.json:
            print_json(
                [{"name": c.name, "description": c.description, "module": c.module} for c in components.values()]
            )
            return
        if not components:
            from torchx.util import distributions
            from torchx.util.distributions import pip_install

            print(f"No components found. `{pip_install(distributions.COMPONENTS)}` installs the builtins.")
            return
        print(f"Found {len(components)} builtin components:")
        width = max(len(n) for n in components)
        for i, (name, c) in enumerate(components.items(), start=1):
            print(f"{i:3}. {name.ljust(width)}  {c.description}")
