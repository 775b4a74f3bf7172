"""The ``torchx`` verbs: the builtin table and the plugins' commands, loaded only when run."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: verb -> ("module:Class", help); the modules are imported only when the verb runs
BUILTIN_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("torchx.cli.cmd_run:CmdRun", "run a component (or an AppDef file) on a scheduler"),
    "builtins": ("torchx.cli.cmd_builtins:CmdBuiltins", "list the installed components"),
    "runopts": ("torchx.cli.cmd_runopts:CmdRunopts", "list the run options of schedulers"),
    "status": ("torchx.cli.cmd_status:CmdStatus", "show the status of an app"),
    "describe": ("torchx.cli.cmd_describe:CmdDescribe", "show the definition of an app"),
    "wait": ("torchx.cli.cmd_wait:CmdWait", "wait for an app to end (exit 0 only if it succeeded)"),
    "log": ("torchx.cli.cmd_log:CmdLog", "print (or follow) the logs of an app"),
    "list": ("torchx.cli.cmd_list:CmdList", "list the apps a scheduler knows"),
    "cancel": ("torchx.cli.cmd_cancel:CmdCancel", "stop an app (it stays describable)"),
    "delete": ("torchx.cli.cmd_cancel:CmdDelete", "stop an app and remove every trace of it"),
    "configure": ("torchx.cli.cmd_configure:CmdConfigure", "write a .torchxconfig template"),
    "plugins": ("torchx.cli.cmd_plugins:CmdPlugins", "list installed plugins, what they register, their errors"),
    "completion": ("torchx.cli.cmd_completion:CmdCompletion", "print a bash, zsh or fish completion script"),
}


def commands() -> tuple[dict[str, tuple[str, str]], str | None]:
    """Every verb (builtins win a name clash with a plugin) and a warning about plugin errors."""
    commands = dict(BUILTIN_COMMANDS)
    note = None
    try:
        from torchx.plugins import get_registry

        registry = get_registry()
        for name, record in registry.cli_commands.items():
            commands.setdefault(
                name,
                (record.factory, record.help or f"(from plugin {registry.origin.get(('cli_commands', name), '?')})"),
            )
        note = registry.failure_summary()
    except Exception as e:  # a broken plugin environment must not take the CLI down
        note = f"plugin discovery failed: {e}"
    return commands, note


def load_command(path: str) -> Any:
    """An instance of the ``SubCommand`` class ``path`` (``"module:Class"``) names."""
    from torchx.cli.cmd_base import SubCommand
    from torchx.plugins import Ref

    cls = Ref(path).load()
    command = cls()
    if not isinstance(command, SubCommand):
        raise TypeError(f"{path} is not a torchx SubCommand")
    return command
