"""``torchx.schedulers.kubernetes_mcad_scheduler``: upstream TorchX's module path for
``kubernetes_mcad``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_k8s.opts import MCADOpts
from torchx_sched_k8s.request import KubernetesRequest as KubernetesMCADJob
from torchx_sched_k8s.scheduler import KubernetesMCADScheduler
from torchx_sched_k8s.scheduler import create_mcad_scheduler as create_scheduler

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
KubernetesMCADOpts = typed_dict(MCADOpts, "KubernetesMCADOpts", __name__)

__all__ = ["KubernetesMCADJob", "KubernetesMCADOpts", "KubernetesMCADScheduler", "create_scheduler"]
