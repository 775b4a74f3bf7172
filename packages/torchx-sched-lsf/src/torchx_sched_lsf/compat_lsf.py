"""``torchx.schedulers.lsf_scheduler``: upstream TorchX's module path for ``lsf``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_lsf.opts import LsfOpts as _LsfOpts
from torchx_sched_lsf.scheduler import LsfScheduler, create_scheduler

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
LsfOpts = typed_dict(_LsfOpts, "LsfOpts", __name__)

__all__ = ["LsfOpts", "LsfScheduler", "create_scheduler"]
