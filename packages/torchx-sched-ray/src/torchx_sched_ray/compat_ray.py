"""``torchx.schedulers.ray_scheduler``: upstream TorchX's module path for ``ray`` (its 0.7 release
shipped a Ray scheduler under that name).

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_ray.opts import RayOpts as _RayOpts
from torchx_sched_ray.request import RayJob
from torchx_sched_ray.scheduler import RayScheduler, create_scheduler

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
RayOpts = typed_dict(_RayOpts, "RayOpts", __name__)

__all__ = ["RayJob", "RayOpts", "RayScheduler", "create_scheduler"]
