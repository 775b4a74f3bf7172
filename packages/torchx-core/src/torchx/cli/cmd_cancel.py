"""``torchx cancel APP_HANDLE`` and ``torchx delete APP_HANDLE``."""

from __future__ import annotations

import argparse
import sys

from torchx.cli.cmd_base import SubCommand
from torchx.specs.handles import UnknownAppException

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.runner import Runner


class _AppAction(SubCommand):
    """A verb that acts on one existing app (``runner.<action>(handle)``)."""

    action = ""
    done = ""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle", help="the app handle: {scheduler}://{session}/{app_id}")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.runner import get_runner

        with get_runner() as runner:
            scheduler, app_id = runner.resolve(args.app_handle)
            if not scheduler.exists(app_id):  # not describe: an app whose record is damaged can still be deleted
                raise UnknownAppException(args.app_handle)
            getattr(runner, self.action)(args.app_handle)
            line = self.outcome(runner, args.app_handle)
        print(line, file=sys.stderr)

    def outcome(self, runner: Runner, app_handle: str) -> str:
        """The line that says what the action did."""
        return f"{self.done} {app_handle}"


class CmdCancel(_AppAction):
    """Stops an app; its record stays for status, describe and logs."""

    action, done = "cancel", "cancelled"

    def outcome(self, runner: Runner, app_handle: str) -> str:
        """The state the app is in after the cancel: ``cancelled <handle>`` (with the scheduler's note
        when it has more to say), ``<handle> had already ended: SUCCEEDED``, or, when the
        scheduler stops it asynchronously, ``cancel requested for <handle> (RUNNING)``."""
        from torchx.specs.status import AppState, is_terminal

        desc = runner.status(app_handle)
        if desc is None:
            return f"cancelled {app_handle}"
        msg = desc.msg.strip().replace("\n", " ")
        note = f": {msg}" if msg and msg.lower() != "cancelled" else ""
        if desc.state == AppState.CANCELLED:
            return f"cancelled {app_handle}{note}"
        if is_terminal(desc.state):
            return f"{app_handle} had already ended: {desc.state.name}{note}"
        return f"cancel requested for {app_handle} ({desc.state.name})"


class CmdDelete(_AppAction):
    """Stops an app and removes everything the scheduler keeps of it."""

    action, done = "delete", "deleted"
