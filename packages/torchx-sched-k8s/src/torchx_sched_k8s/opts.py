"""Run options of the ``kubernetes`` and ``kubernetes_mcad`` schedulers."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchx.schedulers.structured_opts import StructuredOpts

MODE_AUTO = "auto"
MODE_JOBS = "jobs"
MODE_VOLCANO = "volcano"
PULL_POLICIES = ("Always", "IfNotPresent", "Never")


@dataclass
class PodOpts(StructuredOpts):
    """Options every Kubernetes request of torchx shares (they shape the pods)."""

    namespace: str = "default"
    """Kubernetes namespace to run in."""
    service_account: str | None = None
    """Service account the pods run as (default: the namespace's ``default``)."""
    priority_class: str | None = field(default=None, metadata={"aliases": ("priority_class_name",)})
    """PriorityClass of the pods (also accepted as priority_class_name, TorchX's kubernetes_mcad name)."""
    image_repo: str | None = None
    """Image repository to push workspace images to (e.g. registry.example.com/me/train); needs push access."""
    image_pull_policy: str | None = None
    """Always, IfNotPresent or Never (default: Kubernetes' rule, Always for :latest)."""
    image_pull_secret: str | None = field(default=None, metadata={"aliases": ("image_secret",)})
    """Name of a docker-registry Secret to pull images with (also accepted as image_secret, TorchX's kubernetes_mcad name)."""
    node_selector: dict[str, str] | None = None
    """Extra node labels the pods need (key:value;key2:value2); resource capabilities add more."""
    tolerations: list[str] | None = None
    """Taints the pods tolerate, kubectl syntax: key=value:Effect, key:Effect or key=value (;-separated; quote the value on -cfg: tolerations='a=b:NoSchedule;c:NoExecute')."""
    reserved_millicpu: int = 100
    """CPU (millicores) the pods request less than their limit, so a replica sized to a node fits next to its daemons."""
    reserved_memmb: int = 1024
    """Memory (MB) the pods request less than their limit (same reason)."""
    termination_grace_period: int | None = None
    """Seconds a stopped pod gets between SIGTERM and SIGKILL (default: Kubernetes' 30)."""


@dataclass
class KubernetesOpts(PodOpts):
    """Options of the ``kubernetes`` scheduler."""

    mode: str = MODE_AUTO
    """volcano: one Volcano Job (batch.volcano.sh/v1alpha1), as TorchX; jobs: a batch/v1 Job per replica + a headless Service (any cluster, Kueue via queue); auto: volcano when the cluster serves the Volcano Job CRD, else jobs."""
    queue: str | None = None
    """volcano: the Volcano queue (default: default); jobs: the Kueue LocalQueue (label kueue.x-k8s.io/queue-name)."""
    validate_spec: bool = True
    """Server-side dry run of each role's first object before anything is created (an app of one
    object needs none: its creation is all or nothing)."""


@dataclass
class MCADOpts(PodOpts):
    """Options of the ``kubernetes_mcad`` scheduler: the pod options under TorchX's
    ``kubernetes_mcad`` names (``priority_class_name``, ``image_secret``; the ``kubernetes``
    names are accepted too)."""

    priority_class: str | None = field(
        default=None, metadata={"cfg_key": "priority_class_name", "aliases": ("priority_class",)}
    )
    """PriorityClass of the pods (also accepted as priority_class, the kubernetes name)."""
    image_pull_secret: str | None = field(
        default=None, metadata={"cfg_key": "image_secret", "aliases": ("image_pull_secret",)}
    )
    """Name of a docker-registry Secret to pull images with (also accepted as image_pull_secret, the kubernetes name)."""
    priority: int | None = None
    """AppWrapper priority (higher dispatches first)."""
    coscheduler_name: str | None = None
    """Scheduler (schedulerName) of the pods, a co-scheduler: each role also gets a PodGroup (scheduler-plugins) so its pods start all or none."""
    network: str | None = None
    """Multus network attachment(s) of the pods (annotation k8s.v1.cni.cncf.io/networks); needs multus on the cluster."""
