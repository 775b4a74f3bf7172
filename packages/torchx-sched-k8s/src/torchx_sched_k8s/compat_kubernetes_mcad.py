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
from torchx.version import __version__ as torchx_version

from torchx_sched_k8s.names import (
    LABEL_APP_NAME,
    LABEL_K8S_INSTANCE,
    LABEL_K8S_MANAGED_BY,
    LABEL_K8S_NAME,
    LABEL_REPLICA_ID,
    LABEL_ROLE_NAME,
    LABEL_VERSION,
)
from torchx_sched_k8s.opts import MCADOpts
from torchx_sched_k8s.request import (
    LABEL_POD_GROUP,
    MULTUS_NETWORKS,
    build_mcad,
    mcad_scheduling_spec,
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
#: the label of a pod's role index (TorchX's MCAD pod labels)
LABEL_ROLE_INDEX = "torchx.pytorch.org/role-index"
#: the label naming the AppWrapper a PodGroup belongs to
LABEL_APPWRAPPER = "appwrapper.workload.codeflare.dev"
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
    """The AppWrapper custom object that runs ``app`` (what ``kubernetes_mcad`` submits) as
    TorchX's: a dict whose generic items' Pods and Service are ``kubernetes.client`` models
    (``V1Pod``/``V1Service``; the PodGroups stay dicts)."""
    opts = MCADOpts(
        namespace=namespace,
        service_account=service_account,
        image_pull_secret=image_secret,
        coscheduler_name=coscheduler_name,
        priority_class=priority_class_name,
        network=network,
        priority=priority,
    )
    return cast("dict[str, Any]", build_mcad(app, opts).resource)


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


def object_labels(app: AppDef, app_id: str) -> dict[str, str]:
    """The labels TorchX's MCAD helpers put on an app's objects: ``app.kubernetes.io/name`` (the
    app's name), ``app.kubernetes.io/managed-by`` (``torchx.pytorch.org``) and
    ``app.kubernetes.io/instance`` (``app_id``, its Kubernetes name)."""
    return {LABEL_K8S_NAME: app.name, LABEL_K8S_MANAGED_BY: "torchx.pytorch.org", LABEL_K8S_INSTANCE: app_id}


def pod_labels(
    app: AppDef, role_idx: int, role: Role, replica_id: int, coscheduler_name: str | None, app_id: str
) -> dict[str, str]:
    """The labels TorchX's MCAD helpers give replica ``replica_id`` of ``role`` (role
    ``role_idx`` of the app named ``app_id``): :func:`object_labels` plus the torchx version, app
    name, role index, role name and replica id; with a co-scheduler also the label naming the
    role's PodGroup (``<app_id>-pg<role_idx>``)."""
    labels = object_labels(app, app_id)
    labels.update(
        {
            LABEL_VERSION: torchx_version,
            LABEL_APP_NAME: app.name,
            LABEL_ROLE_INDEX: str(role_idx),
            LABEL_ROLE_NAME: role.name,
            LABEL_REPLICA_ID: str(replica_id),
        }
    )
    if coscheduler_name is not None:
        labels[LABEL_POD_GROUP] = pod_group_name(app_id, role_idx)
    return labels


def create_pod_group(app: AppDef, role: Role, role_idx: int, namespace: str, app_id: str) -> dict[str, Any]:
    """The AppWrapper generic item of role ``role_idx``'s PodGroup (``<app_id>-pg<role_idx>``,
    ``minMember`` the role's replicas), labelled with :func:`object_labels` and the AppWrapper's
    name, as TorchX's."""
    labels = {**object_labels(app, app_id), LABEL_APPWRAPPER: app_id}
    group = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": pod_group_name(app_id, role_idx), "namespace": namespace, "labels": labels},
        "spec": {"minMember": role.num_replicas},
    }
    return {"replicas": 1, "generictemplate": group}


def mcad_svc(app: AppDef, svc_name: str, namespace: str, service_port: str) -> V1Service:
    """TorchX's headless ``ClusterIP`` Service ``svc_name`` of the app's pods (``<hostname>.<svc_name>``
    resolves each replica, not-ready ones included) on ``service_port`` (TCP), selecting
    ``app.kubernetes.io/instance=<svc_name>``, as a ``kubernetes.client`` ``V1Service``
    (:func:`svc_manifest` gives the plain manifest)."""
    from torchx_sched_k8s.compat_models import to_model

    return cast("V1Service", to_model(svc_manifest(app, svc_name, namespace, service_port), "V1Service"))


def svc_manifest(app: AppDef, svc_name: str, namespace: str, service_port: str) -> dict[str, Any]:
    """:func:`mcad_svc`'s Service as a plain ``v1`` manifest."""
    port = int(service_port)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": svc_name, "namespace": namespace, "labels": object_labels(app, svc_name)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "ports": [{"protocol": "TCP", "port": port, "targetPort": port}],
            "selector": {LABEL_K8S_INSTANCE: svc_name},
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    }


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
    """The ``kubernetes.client`` ``V1Pod`` TorchX's MCAD ``role_to_pod`` gives: the pod of
    :func:`torchx_sched_k8s.compat_kubernetes.role_to_pod` named ``name`` in ``namespace``,
    ``apiVersion``/``kind`` set, hostname ``name`` and subdomain ``unique_app_id``; its
    container also gets ``TORCHX_MCAD_<ROLE>_0_HOSTS``, the host of the role's replica 0
    (``<unique_app_id>-0.<unique_app_id>``); with the MCAD pod options: pull secret,
    co-scheduler, priority class and multus network (each when given)."""
    from torchx_sched_k8s.compat_kubernetes import pod_manifest
    from torchx_sched_k8s.compat_models import to_model

    pod = pod_manifest(name, role, service_account)
    spec = pod["spec"]
    hosts = f"TORCHX_MCAD_{cleanup_str(role.name)}_0_HOSTS".upper().replace("-", "")
    container = spec["containers"][0]
    container["env"].append({"name": hosts, "value": f"{unique_app_id}-0.{unique_app_id}"})
    spec.update(hostname=name, subdomain=unique_app_id)
    if image_secret:
        spec["imagePullSecrets"] = [{"name": image_secret}]
    if coscheduler_name:
        spec["schedulerName"] = coscheduler_name
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    metadata = pod["metadata"]
    metadata.update(name=name, namespace=namespace)
    if network:
        metadata["annotations"][MULTUS_NETWORKS] = network
    return cast("V1Pod", to_model({"apiVersion": "v1", "kind": "Pod", **pod}, "V1Pod"))


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


def _first_container(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    containers = (pod.get("spec") or {}).get("containers")
    return containers[0] if containers else None


def _read_first_pod(role: Role, container: Mapping[str, Any]) -> None:
    """Fills ``role`` from the first pod's container as TorchX's reader does: field after field
    in a fixed order (image, command, env, resources, ports, volume mounts), each taken as the
    manifest holds it, stopping at the first one the container lacks."""
    if "image" not in container:
        return
    role.image = container["image"]
    if "command" not in container:
        return
    role.args = container["command"]  # the whole command; the entrypoint stays unset, as TorchX's
    if "env" not in container:
        return
    role.env = container["env"]
    if "resources" not in container:
        return
    requests = container["resources"].get("requests") or {}
    if "cpu" not in requests:
        return
    resource = Resource(cpu=requests["cpu"], gpu=-1, memMB=-1)
    for key, value in requests.items():  # any resource named like a GPU (nvidia.com/gpu ...); the last wins
        if "gpu" in key:
            resource.gpu = value
    if "memory" not in requests:
        return
    resource.memMB = requests["memory"]
    role.resource = resource
    if "ports" not in container:
        return
    role.port_map = container["ports"]
    if "volumeMounts" in container:
        role.mounts = container["volumeMounts"]


def get_role_information(generic_items: Iterable[Mapping[str, Any]]) -> dict[str, Role]:
    """The roles of an AppWrapper, read from its generic items as TorchX 0.7 reads them: one
    :class:`Role` per ``torchx.pytorch.org/role-name`` label, ``num_replicas`` the number of
    items with that label, the rest from the first item's first container, each value as the
    manifest holds it (not parsed): ``image``, ``args`` = the container's whole ``command``,
    ``env`` = its ``env``, ``resource`` = its ``requests`` (``cpu``, a ``*gpu*`` key, ``memory``),
    ``port_map`` = its ``ports``, ``mounts`` = its ``volumeMounts``. Reading stops at the first
    of these the container lacks (a role without ``requests.memory`` keeps the null resource)."""
    roles: dict[str, Role] = {}
    for item in generic_items:
        pod = item.get("generictemplate")
        if not pod or "metadata" not in pod:
            continue
        name = (pod["metadata"].get("labels") or {}).get(LABEL_ROLE_NAME)
        if name is None:
            continue
        if name in roles:
            roles[name].num_replicas += 1
            continue
        roles[name] = role = Role(name=name, image="", num_replicas=1)
        container = _first_container(pod)
        if container is not None:
            _read_first_pod(role, container)
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
