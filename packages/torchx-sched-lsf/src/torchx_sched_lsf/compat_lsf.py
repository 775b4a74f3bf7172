"""``torchx.schedulers.lsf_scheduler``: upstream TorchX's module path for ``lsf``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_lsf.opts import LsfOpts
from torchx_sched_lsf.scheduler import LsfScheduler, create_scheduler

__all__ = ["LsfOpts", "LsfScheduler", "create_scheduler"]
