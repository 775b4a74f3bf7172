"""``torchx.schedulers.kubernetes_scheduler``: upstream TorchX's module path for ``kubernetes``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_k8s.names import LABEL_APP_NAME, LABEL_REPLICA_ID, LABEL_ROLE_NAME, LABEL_VERSION
from torchx_sched_k8s.opts import KubernetesOpts
from torchx_sched_k8s.request import KubernetesRequest as KubernetesJob
from torchx_sched_k8s.scheduler import KubernetesScheduler, create_scheduler

__all__ = [
    "LABEL_APP_NAME",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_NAME",
    "LABEL_VERSION",
    "KubernetesJob",
    "KubernetesOpts",
    "KubernetesScheduler",
    "create_scheduler",
]
