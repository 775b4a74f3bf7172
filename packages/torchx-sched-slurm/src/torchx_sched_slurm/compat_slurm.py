"""``torchx.schedulers.slurm_scheduler``: upstream TorchX's module path for ``slurm``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_slurm.opts import SlurmOpts as _SlurmOpts
from torchx_sched_slurm.scheduler import SlurmScheduler, create_scheduler
from torchx_sched_slurm.script import SbatchRequest as SlurmBatchRequest
from torchx_sched_slurm.states import SLURM_STATES

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
SlurmOpts = typed_dict(_SlurmOpts, "SlurmOpts", __name__)

__all__ = ["SLURM_STATES", "SlurmBatchRequest", "SlurmOpts", "SlurmScheduler", "create_scheduler"]
