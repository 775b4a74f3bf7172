"""The :class:`SubCommand` base class of every ``torchx`` verb, builtin or from a plugin."""

from __future__ import annotations

import abc
import argparse


class SubCommand(abc.ABC):
    """A ``torchx`` sub-command: declares its arguments, then runs.

    Example::

        class CmdMyTool(SubCommand):
            def add_arguments(self, subparser):
                subparser.add_argument("app_id", help="app handle")

            def run(self, args):
                print(args.app_id)
    """

    @abc.abstractmethod
    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds this command's arguments to ``subparser``."""

    @abc.abstractmethod
    def run(self, args: argparse.Namespace) -> int | None:
        """Runs the command and returns its exit code (None means 0).

        Raise an exception with a clear message to fail (exit code 1).
        """
