"""``torchx runopts [SCHEDULER] [--json]``."""

from __future__ import annotations

import argparse
from typing import Any

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json


def _opts_data(opts: Any) -> dict[str, Any]:
    from torchx.specs.runopts import get_type_name

    return {
        key: {
            "type": get_type_name(o.opt_type),
            "required": o.is_required,
            "default": o.default,
            "help": o.help,
            "aliases": o.aliases,
        }
        for key, o in opts
    }


class CmdRunopts(SubCommand):
    """Shows the run options (``-cfg``) of one scheduler, or of every installed one."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("scheduler", nargs="?", default=None, help="one scheduler (default: all)")
        subparser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.runner import get_runner

        with get_runner() as runner:
            names = [args.scheduler] if args.scheduler else runner.scheduler_backends()
            if not names:
                from torchx.util import distributions
                from torchx.util.distributions import pip_install

                print(f"No scheduler is installed. `{pip_install(distributions.LOCAL)}` installs local_cwd.")
                return 1
            data: dict[str, Any] = {}
            failures = 0
            for name in names:
                try:
                    data[name] = runner.scheduler_run_opts(name)
                except Exception as e:
                    if args.scheduler:
                        raise
                    failures += 1
                    data[name] = e
        if args.json:
            print_json(
                {n: _opts_data(o) if not isinstance(o, Exception) else {"error": str(o)} for n, o in data.items()}
            )
            return 0
        for name, opts in data.items():
            print(f"{name}:")
            print(f"    error: {opts}" if isinstance(opts, Exception) else repr(opts))
            print()
        return 1 if failures and not data else 0
