"""``torchx log APP_HANDLE[/ROLE[/REPLICA_IDS]]``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import parse_time


def split_log_target(target: str) -> tuple[str, str | None, list[int] | None]:
    """``sched://session/app_id[/role[/0,1]]`` -> (handle, role, replica ids).

    Raises:
        ValueError: the replica ids are not integers
    """
    from torchx.specs.handles import parse_app_handle

    parsed = parse_app_handle(target)
    app_id, _, rest = parsed.app_id.partition("/")
    role, _, ids = rest.partition("/")
    handle = f"{parsed.scheduler_backend}://{parsed.session_name}/{app_id}"
    replica_ids = None
    if ids:
        try:
            replica_ids = [int(i) for i in ids.split(",") if i]
        except ValueError:
            raise ValueError(f"replica ids must be integers like 0,1 (got {ids!r})") from None
    return handle, role or None, replica_ids


class CmdLog(SubCommand):
    """Prints the logs of an app's replicas, prefixed with ``role/replica``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("target", help="{scheduler}://{session}/{app_id}[/{role}[/{replica_ids,...}]]")
        subparser.add_argument("-t", "--tail", action="store_true", help="follow the logs until the replicas end")
        subparser.add_argument("--regex", default=None, help="only lines matching this regex")
        subparser.add_argument(
            "--since", default=None, help="only lines from then on: ISO time, unix time, or 10m/2h ago"
        )
        subparser.add_argument("--until", default=None, help="only lines before then (same forms as --since)")
        subparser.add_argument(
            "--streams",
            choices=["stdout", "stderr", "combined"],
            default=None,
            help="only this output (default: all of it, stdout and stderr as they came)",
        )

    def run(self, args: argparse.Namespace) -> None:
        from torchx.cli.log_stream import replicas_of, stream_logs
        from torchx.runner import get_runner
        from torchx.schedulers.streams import Stream

        if args.regex is not None:
            import re

            try:
                re.compile(args.regex)
            except re.error as e:
                raise ValueError(f"invalid --regex {args.regex!r}: {e}") from None
        handle, role, replica_ids = split_log_target(args.target)
        since = parse_time(args.since) if args.since else None
        until = parse_time(args.until) if args.until else None
        with get_runner() as runner:
            pairs = replicas_of(runner, handle, role, replica_ids)
            if not pairs:
                present = ", ".join(f"{r}/{k}" for r, k in replicas_of(runner, handle, role))
                raise ValueError(f"no replicas match {args.target}; the app has {present}")
            threads, errors = stream_logs(
                runner,
                handle,
                pairs,
                args.tail,
                args.regex,
                since,
                until,
                Stream(args.streams) if args.streams else None,
            )
            for t in threads:
                t.join()
        if errors:
            raise RuntimeError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
