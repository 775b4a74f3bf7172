"""``torchx list -s SCHEDULER``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json, print_table


class CmdList(SubCommand):
    """Lists the apps a scheduler knows."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "-s", "--scheduler", default=None, help="the scheduler (default: [cli:list] or local_cwd)"
        )
        subparser.add_argument(
            "-cfg", "--scheduler_args", default=None, help="run options, k1=v1,k2=v2 (e.g. namespace=x)"
        )
        subparser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import config, get_runner
        from torchx.schedulers import get_default_scheduler_name

        scheduler = args.scheduler or config.get_config("cli", "list", "scheduler") or get_default_scheduler_name()
        with get_runner() as runner:
            cfg = dict(runner.cfg_from_str(scheduler, args.scheduler_args)) if args.scheduler_args else None
            apps = runner.list(scheduler, cfg)
        if args.json:
            print_json(
                [
                    {
                        "app_handle": a.app_handle,
                        "app_id": a.app_id,
                        "name": a.name,
                        "state": a.state.name,
                        # seconds since the epoch where the scheduler knows them, else null
                        "submitted": a.submitted,
                        "started": a.started,
                        "ended": a.ended,
                    }
                    for a in apps
                ]
            )
        else:
            print_table([[a.app_handle, a.name, a.state.name] for a in apps], ["APP HANDLE", "NAME", "STATE"])
