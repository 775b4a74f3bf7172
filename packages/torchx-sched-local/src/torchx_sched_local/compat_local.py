"""``torchx.schedulers.local_scheduler``: upstream TorchX's module path for ``local_cwd``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

import signal
from dataclasses import dataclass, field

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_local.image_providers import CWDImageProvider, ImageProvider, LocalDirectoryImageProvider
from torchx_sched_local.local_scheduler import LocalOpts as _LocalOpts
from torchx_sched_local.local_scheduler import LocalScheduler, create_scheduler
from torchx_sched_local.replica_param import ReplicaParam

#: file names upstream gives a replica's logs
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
COMBINED_LOG = "combined.log"


@dataclass
class PopenRequest:
    """What upstream's local scheduler runs: the app id, its log dir and each role's replicas."""

    app_id: str
    log_dir: str
    role_params: dict[str, list[ReplicaParam]] = field(default_factory=dict)
    role_log_dirs: dict[str, list[str]] = field(default_factory=dict)


class SignalException(Exception):
    """A termination signal (SIGTERM, SIGINT ...) turned into an exception, as TorchX's local
    scheduler raises in the process that waits for its app.

    Args:
        msg: what happened
        sigval: the signal received
    """

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
LocalOpts = typed_dict(_LocalOpts, "LocalOpts", __name__)

__all__ = [
    "CWDImageProvider",
    "ImageProvider",
    "LocalDirectoryImageProvider",
    "PopenRequest",
    "SignalException",
    "ReplicaParam",
    "COMBINED_LOG",
    "STDERR_LOG",
    "STDOUT_LOG",
    "LocalOpts",
    "LocalScheduler",
    "create_scheduler",
]
