"""``torchx plugins [--json] [--refresh]``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json


class CmdPlugins(SubCommand):
    """Lists installed plugin distributions, their versions, what they register and their errors."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--json", action="store_true", help="print JSON")
        subparser.add_argument("--refresh", action="store_true", help="ignore the discovery cache")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli.verbs import BUILTIN_COMMANDS
        from torchx.plugins import get_registry

        registry = get_registry(refresh=args.refresh)
        shadowed_verbs = [n for n in registry.cli_commands if n in BUILTIN_COMMANDS]
        if args.json:
            data = registry.to_data()
            print_json(
                {
                    "plugins": data["plugins"],
                    "conflicts": data["conflicts"],
                    "ignored_commands": shadowed_verbs,
                }
            )
            return 0
        if not registry.plugins:
            from torchx.util import distributions
            from torchx.util.distributions import pip_install

            print(
                "No torchx plugins installed. Try"
                f" `{pip_install(distributions.LOCAL)}` and `{pip_install(distributions.COMPONENTS)}`."
            )
            return 0
        for p in registry.plugins:
            entry = f" {p.name} = {p.value}" if p.name else ""  # a distribution's registrations: no name
            if p.incompatible:  # one line: nothing was loaded from it
                print(f"{p.dist} {p.version}  [{p.group}]{entry}  ({p.errors[0]})")
                continue
            status = "ERROR" if p.errors else "ok"
            print(f"{p.dist} {p.version}  [{p.group}]{entry}  ({status})")
            for kind, names in p.registers.items():
                print(f"    {kind}: {', '.join(names)}")
            for hook in p.event_hooks or [f"hooks in {m}" for m in p.hook_modules]:
                print(f"    hook: {hook}")
            for error in p.errors:
                print(f"    error: {error}")
        for c in registry.conflicts:
            print(f"conflict: {c.kind} {c.name!r} from {c.loser} is shadowed by {c.winner}")
        for name in shadowed_verbs:
            print(f"conflict: command {name!r} from {registry.origin.get(('cli_commands', name))} is ignored (builtin)")
        return 1 if registry.errors else 0
