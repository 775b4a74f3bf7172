"""TorchX 0.7's ``ReplicaParam``: how one replica of a local app is launched. Its own module so
that both the dry-run request of :mod:`.local_scheduler` and the upstream module path
:mod:`.compat_local` use it, neither importing the other for it."""

from dataclasses import dataclass


@dataclass
class ReplicaParam:
    """How one replica is launched (upstream's record): its argv, environment, log files and cwd."""

    args: list[str]
    env: dict[str, str]
    stdout: str | None = None
    stderr: str | None = None
    combined: str | None = None
    cwd: str | None = None
