"""``torchx.schedulers.slurm_scheduler``: upstream TorchX's module path for ``slurm``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_slurm.opts import SlurmOpts
from torchx_sched_slurm.scheduler import SlurmScheduler, create_scheduler
from torchx_sched_slurm.script import SbatchRequest as SlurmBatchRequest
from torchx_sched_slurm.states import SLURM_STATES

__all__ = ["SLURM_STATES", "SlurmBatchRequest", "SlurmOpts", "SlurmScheduler", "create_scheduler"]
