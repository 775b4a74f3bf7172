"""``torchx.schedulers.local_scheduler``: upstream TorchX's module path for ``local_cwd``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_local.local_scheduler import LocalOpts, LocalScheduler, create_scheduler

#: file names upstream gives a replica's logs
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
COMBINED_LOG = "combined.log"

__all__ = ["COMBINED_LOG", "STDERR_LOG", "STDOUT_LOG", "LocalOpts", "LocalScheduler", "create_scheduler"]
