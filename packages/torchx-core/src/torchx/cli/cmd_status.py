"""``torchx status APP_HANDLE``.

A scheduler that runs an app as a series of attempts (``managed``) lists them in
``DescribeAppResponse.metadata["attempts"]``; they are shown one line each (``--json``: an
``attempts`` list with ``handle``, ``scheduler``, ``state``, ``cause``, ``exit_code``,
``started``, ``ended``).
"""

from __future__ import annotations

import argparse
from typing import Any

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
        from torchx.runner.api import _to_status

        with get_runner() as runner:
            desc = runner.describe_app(args.app_handle)
        if desc is None:
            raise UnknownAppException(args.app_handle)
        status = _to_status(desc)
        attempts = desc.metadata.get("attempts")
        attempts = attempts if isinstance(attempts, list) else None
        if args.json:
            extra = {} if attempts is None else {"attempts": attempts}
            print_json({"app_handle": args.app_handle, **status.to_json(roles), **extra})
        else:
            text = f"{status.state.name}  {args.app_handle}\n" + status.format(roles)
            if attempts is not None:
                text += "Attempts:\n" + "".join(f"    {format_attempt(a)}\n" for a in attempts)
            print(text)


def format_attempt(attempt: dict[str, Any]) -> str:
    """One line of an attempt: number, target, handle, state, cause, exit code, duration, and
    for a failed one its scheduler's words (``submission failed: ...``)."""
    started, ended = attempt.get("started"), attempt.get("ended")
    if isinstance(started, (int, float)):
        import time

        seconds = (ended if isinstance(ended, (int, float)) else time.time()) - started
        duration = f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}m"
    else:
        duration = "-"
    code = attempt.get("exit_code")
    state = str(attempt.get("state") or "-")
    if ended is None:  # an end its scheduler reports that the managed job has not recorded yet
        duration += " (end not recorded yet)" if state in ("SUCCEEDED", "FAILED", "CANCELLED") else " (running)"
    return "  ".join(
        [
            f"#{attempt.get('attempt', '?')}",
            str(attempt.get("scheduler") or "-"),
            str(attempt.get("handle") or "-"),
            state,
            str(attempt.get("cause") or "-"),
            f"exit={code}" if code is not None else "exit=-",
            duration,
            *([str(attempt["reason"])] if attempt.get("reason") and attempt.get("cause") else []),
        ]
    )
