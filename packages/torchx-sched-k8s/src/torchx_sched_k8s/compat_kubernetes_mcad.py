"""``torchx.schedulers.kubernetes_mcad_scheduler``: upstream TorchX's module path for
``kubernetes_mcad``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from torchx.schedulers.ids import make_unique
from torchx.schedulers.structured_opts import typed_dict
from torchx.specs.roles import AppDef, Resource, Role
from torchx.specs.status import AppState

from torchx_sched_k8s.names import LABEL_ROLE_NAME
from torchx_sched_k8s.opts import MCADOpts
from torchx_sched_k8s.request import (
    LABEL_POD_GROUP,
    MULTUS_NETWORKS,
    _factories,
    _service,
    build_mcad,
    mcad_scheduling_spec,
    pod_group,
    pod_group_name,
)
from torchx_sched_k8s.request import KubernetesRequest as KubernetesMCADJob
from torchx_sched_k8s.scheduler import KubernetesMCADScheduler
from torchx_sched_k8s.scheduler import create_mcad_scheduler as create_scheduler
from torchx_sched_k8s.status import MCAD_STATES

if TYPE_CHECKING:
    from kubernetes.client import V1Pod, V1Service

#: AppWrapper ``status.state`` -> AppState (a copy of the scheduler's table)
JOB_STATE: dict[str, AppState] = dict(MCAD_STATES)
#: the port TorchX's rendezvous uses when no role maps one
DEFAULT_PORT = "29500"

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
KubernetesMCADOpts = typed_dict(MCADOpts, "KubernetesMCADOpts", __name__)


def app_to_resource(
    app: AppDef,
    namespace: str,
    service_account: str | None = None,
    image_secret: str | None = None,
    coscheduler_name: str | None = None,
    priority_class_name: str | None = None,
    network: str | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    """The AppWrapper custom object that runs ``app`` (what ``kubernetes_mcad`` submits), as a dict."""
    opts = MCADOpts(
        namespace=namespace,
        service_account=service_account,
        image_pull_secret=image_secret,
        coscheduler_name=coscheduler_name,
        priority_class=priority_class_name,
        network=network,
        priority=priority,
    )
    return build_mcad(app, opts).objects[0]


def cleanup_str(data: str) -> str:
    """``data`` lower-cased with every character but ``[a-z0-9-]`` removed, without a leading
    ``-`` or digits (a name Kubernetes accepts)."""
    return re.sub(r"[^a-z0-9-]", "", data.lower().removeprefix("-")).lstrip("0123456789")


def get_unique_truncated_appid(app: AppDef) -> str:
    """``<app name>-<random id>`` (cleaned up by :func:`cleanup_str`) short enough for every
    object made from it, ``<name>-pg<role index>`` PodGroups included (63 characters): the
    random id has 14 characters, fewer when the name is long, and at least 3, the name then cut
    to fit (with a warning). Sized as TorchX's; ``app`` itself is not changed (TorchX cut its name).
    """
    pod_group_chars = 3 + len(app.roles)
    name = app.name
    id_chars = min(14, 63 - (len(name) + 4 + pod_group_chars))
    if id_chars <= 3:
        warnings.warn(f"app name {name!r} is too long for Kubernetes object names; it is cut", stacklevel=2)
        name, id_chars = name[: 63 - 4 - pod_group_chars], 3
    return cleanup_str(make_unique(name, id_chars))


def enable_retry(job_spec: dict[str, Any], appwrapper_retries: int, total_pods: int) -> None:
    """Sets ``job_spec["schedulingSpec"]``: dispatch when ``total_pods`` fit, requeue a failed
    wrapper up to ``appwrapper_retries`` times, with TorchX's back-off (300 s, growing
    exponentially, no upper limit), as the scheduler's AppWrappers."""
    job_spec["schedulingSpec"] = mcad_scheduling_spec(total_pods, appwrapper_retries)


def create_pod_group(app: AppDef, role: Role, role_idx: int, namespace: str, app_id: str) -> dict[str, Any]:
    """The AppWrapper generic item of role ``role_idx``'s PodGroup (``<app_id>-pg<role_idx>``),
    as ``kubernetes_mcad`` adds it when ``coscheduler_name`` is set."""
    factory = _factories(app, app_id, MCADOpts(namespace=namespace), "Never")[role_idx]
    return {"replicas": 1, "generictemplate": pod_group(pod_group_name(app_id, role_idx), namespace, factory)}


def mcad_svc(app: AppDef, svc_name: str, namespace: str, service_port: str | None = None) -> V1Service:
    """The headless Service of the app's pods (``<hostname>.<svc_name>`` resolves each replica),
    with the roles' ports, or ``service_port`` alone when given, as a ``kubernetes.client``
    ``V1Service`` (upstream's return type; :func:`svc_manifest` gives the plain manifest)."""
    from torchx_sched_k8s.compat_models import to_model

    return cast("V1Service", to_model(svc_manifest(app, svc_name, namespace, service_port), "V1Service"))


def svc_manifest(app: AppDef, svc_name: str, namespace: str, service_port: str | None = None) -> dict[str, Any]:
    """:func:`mcad_svc`'s Service as a plain ``v1`` manifest."""
    service = _service(svc_name, namespace, _factories(app, svc_name, MCADOpts(namespace=namespace), "Never"))
    if service_port is not None:
        port = int(service_port)
        service["spec"]["ports"] = [{"name": "port", "port": port, "targetPort": port}]
    return service


def role_to_pod(
    name: str,
    unique_app_id: str,
    namespace: str,
    role: Role,
    service_account: str | None = None,
    image_secret: str | None = None,
    coscheduler_name: str | None = None,
    priority_class_name: str | None = None,
    network: str | None = None,
) -> V1Pod:
    """The ``kubernetes.client`` ``V1Pod`` of one replica of ``role`` in the app named
    ``unique_app_id``, with the MCAD pod options: pull secret, co-scheduler, priority class and
    multus network; its container also gets ``TORCHX_MCAD_<ROLE>_0_HOSTS``, the host of the
    role's replica 0 (``<unique_app_id>-0.<unique_app_id>``), as TorchX's. ``namespace`` is
    TorchX's parameter; the pod takes it from the AppWrapper it is created in. The pod is the
    one :func:`torchx_sched_k8s.compat_kubernetes.role_to_pod` describes, with these options."""
    from torchx_sched_k8s.compat_kubernetes import pod_manifest
    from torchx_sched_k8s.compat_models import to_model

    pod = pod_manifest(name, role, service_account)
    spec = pod["spec"]
    hosts = f"TORCHX_MCAD_{cleanup_str(role.name)}_0_HOSTS".upper().replace("-", "")
    container = spec["containers"][0]
    container["env"] = [*container.get("env", []), {"name": hosts, "value": f"{unique_app_id}-0.{unique_app_id}"}]
    if image_secret:
        spec["imagePullSecrets"] = [{"name": image_secret}]
    if coscheduler_name:
        spec["schedulerName"] = coscheduler_name
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    if network:
        pod["metadata"]["annotations"] = {**pod["metadata"]["annotations"], MULTUS_NETWORKS: network}
    return cast("V1Pod", to_model(pod, "V1Pod"))


def object_labels(app: AppDef, app_id: str) -> dict[str, str]:
    """The labels of the objects of the app named ``app_id`` (its Kubernetes name)."""
    return dict(_factories(app, app_id, MCADOpts(), "Never")[0].base_labels)


def pod_labels(
    app: AppDef, role_idx: int, role: Role, replica_id: int, coscheduler_name: str | None, app_id: str
) -> dict[str, str]:
    """The labels of replica ``replica_id`` of ``app.roles[role_idx]`` in the app named ``app_id``;
    with a co-scheduler also the label naming the role's PodGroup. ``role`` is accepted for
    TorchX's signature; the role is ``app.roles[role_idx]``."""
    labels = dict(_factories(app, app_id, MCADOpts(), "Never")[role_idx].labels(replica_id))
    if coscheduler_name is not None:
        labels[LABEL_POD_GROUP] = pod_group_name(app_id, role_idx)
    return labels


def get_port_for_service(app: AppDef) -> str:
    """The port the app's Service exposes: the last port of the roles' ``port_map`` (TorchX's
    rule), 29500 when none is mapped or the port is out of range (with a warning)."""
    port = DEFAULT_PORT
    for role in app.roles:
        for value in (role.port_map or {}).values():
            port = str(value)
    if not 0 < int(port) <= 65535:
        warnings.warn(f"port_map has port {port}, not in 1-65535; using {DEFAULT_PORT}", stacklevel=2)
        port = DEFAULT_PORT
    return port


def get_appwrapper_status(app: Mapping[str, Any]) -> AppState:
    """The state of an AppWrapper object (``status.state``); PENDING before MCAD dispatched it."""
    state = (app.get("status") or {}).get("state")
    if not state:
        return AppState.PENDING
    return JOB_STATE.get(str(state), AppState.UNKNOWN)


def get_tasks_status_description(status: Mapping[str, Any]) -> dict[str, Any]:
    """The task counts of an AppWrapper's ``status``: ``running``, ``pending``, ``failed`` and
    ``Succeeded`` (MCAD's spelling), those present only, as the status holds them (as TorchX)."""
    return {key: status[key] for key in ("running", "pending", "failed", "Succeeded") if key in status}


def _memory_mb(quantity: str) -> int:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024, "K": 1000 / 1024**2, "M": 1000**2 / 1024**2}
    units["G"] = 1000**3 / 1024**2
    for suffix in sorted(units, key=len, reverse=True):
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * units[suffix])
    return int(float(quantity) / 1024**2)


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def get_role_information(generic_items: Iterable[Mapping[str, Any]]) -> dict[str, Role]:
    """The roles of an AppWrapper, read from its generic items: one :class:`Role` per
    ``torchx.pytorch.org/role-name`` label, with the replica count, and the image, command,
    environment and resource (limits, else requests) of its first pod."""
    roles: dict[str, Role] = {}
    for item in generic_items:
        pod = item.get("generictemplate") or {}
        name = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_ROLE_NAME)
        if name is None:
            continue
        if name in roles:
            roles[name].num_replicas += 1
            continue
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        container = containers[0]
        command = [*(container.get("command") or []), *(container.get("args") or [])]
        resources = container.get("resources") or {}
        sizes = resources.get("limits") or resources.get("requests") or {}  # limits: what the role asked for
        gpus = [int(v) for k, v in sizes.items() if "gpu" in k]
        resource = Resource(
            cpu=round(_cpu(str(sizes["cpu"]))) if "cpu" in sizes else -1,
            gpu=gpus[0] if gpus else 0,
            memMB=_memory_mb(str(sizes["memory"])) if "memory" in sizes else -1,
        )
        roles[name] = Role(
            name=name,
            image=str(container.get("image", "")),
            entrypoint=command[0] if command else "",
            args=command[1:],
            env={e["name"]: str(e.get("value", "")) for e in container.get("env") or [] if "name" in e},
            num_replicas=1,
            resource=resource,
        )
    return roles


__all__ = [
    "JOB_STATE",
    "KubernetesMCADJob",
    "KubernetesMCADOpts",
    "KubernetesMCADScheduler",
    "app_to_resource",
    "cleanup_str",
    "create_pod_group",
    "enable_retry",
    "get_unique_truncated_appid",
    "mcad_svc",
    "object_labels",
    "pod_labels",
    "role_to_pod",
    "svc_manifest",
    "create_scheduler",
    "get_appwrapper_status",
    "get_port_for_service",
    "get_role_information",
    "get_tasks_status_description",
]
