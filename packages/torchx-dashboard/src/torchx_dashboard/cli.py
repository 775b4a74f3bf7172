"""``torchx dashboard [--host 127.0.0.1] [--port 8620] [--read-only] [--token TOKEN] [-s SCHEDULER ...]``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand

DEFAULT_PORT = 8620


class CmdDashboard(SubCommand):
    """Serves a web page of every job on the installed schedulers until interrupted."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.description = (
            "Serve a web page of every job on every installed scheduler: states, live logs, cancel, sweeps."
            " It binds 127.0.0.1; any other --host needs a token (given with --token or generated and printed)."
        )
        subparser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
        subparser.add_argument(
            "--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT}; 0: any free port)"
        )
        subparser.add_argument(
            "--read-only", "--read_only", dest="read_only", action="store_true", help="no cancel or delete"
        )
        subparser.add_argument(
            "--token", default=None, help="token every request must carry (Bearer or the URL's cookie)"
        )
        subparser.add_argument(
            "-s",
            "--scheduler",
            dest="schedulers",
            action="append",
            default=[],
            metavar="SCHEDULER",
            help="show only this scheduler's jobs (repeat for more; default: every installed one that can list)",
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx_dashboard.server import serve

        if not 0 <= args.port <= 65535:
            raise ValueError(f"--port must be between 0 and 65535 (got {args.port})")
        schedulers = [s for value in args.schedulers for s in value.split(",") if s]
        try:
            serve(args.host, args.port, args.token, args.read_only, schedulers)
        except KeyboardInterrupt:
            pass
        return 0
