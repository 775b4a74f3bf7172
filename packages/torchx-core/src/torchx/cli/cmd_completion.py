"""``torchx completion bash|zsh|fish``: print a shell completion script."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand


class CmdCompletion(SubCommand):
    """Prints the completion script for a shell; candidates come from what is installed."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "shell",
            choices=("bash", "zsh", "fish"),
            help='bash: eval "$(torchx completion bash)"; zsh: eval "$(torchx completion zsh)";'
            " fish: torchx completion fish | source",
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli.completion import script

        print(script(args.shell), end="")
        return 0
