"""``torchx.schedulers.ray_scheduler``: upstream TorchX's module path for ``ray`` (its 0.7 release
shipped a Ray scheduler under that name).

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

import importlib.util

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_ray.opts import RayOpts as _RayOpts
from torchx_sched_ray.request import RayJob
from torchx_sched_ray.scheduler import RayScheduler, create_scheduler

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
RayOpts = typed_dict(_RayOpts, "RayOpts", __name__)


def has_ray() -> bool:
    """Whether the ``ray`` package can be imported here (TorchX's check). This scheduler submits
    through Ray's job API and does not need it on the submitting machine; the job's driver does."""
    return importlib.util.find_spec("ray") is not None


__all__ = ["RayJob", "RayOpts", "RayScheduler", "create_scheduler", "has_ray"]
