"""``torchx.schedulers.kubernetes_scheduler``: upstream TorchX's module path for ``kubernetes``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

from torchx.schedulers.structured_opts import typed_dict
from torchx.specs.roles import AppDef, Role

from torchx_sched_k8s.names import LABEL_APP_NAME, LABEL_REPLICA_ID, LABEL_ROLE_NAME, LABEL_VERSION
from torchx_sched_k8s.opts import MODE_VOLCANO, PodOpts
from torchx_sched_k8s.opts import KubernetesOpts as _KubernetesOpts
from torchx_sched_k8s.pods import placement, resources, role_volumes
from torchx_sched_k8s.request import KubernetesRequest as KubernetesJob
from torchx_sched_k8s.request import _factories, build_volcano
from torchx_sched_k8s.scheduler import KubernetesScheduler, create_scheduler

if TYPE_CHECKING:
    from kubernetes.client import V1Pod

#: CPU (millicores) and memory (MB) pods request below their limit by default
RESERVED_MILLICPU: int = PodOpts.reserved_millicpu
RESERVED_MEMMB: int = PodOpts.reserved_memmb

#: the extended resource upstream's ``efa_device_count`` sets
EFA_DEVICE = "vpc.amazonaws.com/efa"
#: the pod annotation that keeps Istio from adding a sidecar (it would keep the pod from ending)
ANNOTATION_ISTIO_SIDECAR = "sidecar.istio.io/inject"


def app_to_resource(
    app: AppDef,
    queue: str,
    service_account: str | None,
    priority_class: str | None = None,
) -> dict[str, Any]:
    """The Volcano ``Job`` custom object that runs ``app`` (``mode=volcano`` of our scheduler)
    as TorchX's: a dict whose tasks' pod templates are ``kubernetes.client`` ``V1Pod`` models
    (:attr:`KubernetesJob.resource <torchx_sched_k8s.request.KubernetesRequest.resource>`).

    Difference from upstream: the job is in the ``default`` namespace with our naming, labels
    and rank-0/env wiring.
    """
    opts = _KubernetesOpts(
        mode=MODE_VOLCANO, queue=queue, service_account=service_account, priority_class=priority_class
    )
    return cast("dict[str, Any]", build_volcano(app, opts).resource)


def role_to_pod(
    name: str,
    role: Role,
    service_account: str | None,
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
    efa_device_count: int | None = None,
) -> V1Pod:
    """The ``kubernetes.client`` ``V1Pod`` TorchX's ``role_to_pod`` gives for ``role``: one
    container named ``name`` running ``[entrypoint, *args]`` as they are (macros not filled in:
    the scheduler fills them in per replica), the role's env, ports, mounts (plus a
    memory-backed ``/dev/shm``) and resources (memory as ``<memMB>M``; requests ``reserved_*``
    below the limits), the ``sidecar.istio.io/inject: "false"`` annotation, restart policy
    ``Never``; the container always has a security context and the pod a node selector (empty
    when nothing is set). ``efa_device_count`` (when not None) sets the role's
    ``vpc.amazonaws.com/efa`` devices. See :func:`pod_manifest` for the plain manifest.

    The pods the scheduler submits are this pod plus what it adds per replica (the torchx env,
    hostname/subdomain, labels and annotations)."""
    from torchx_sched_k8s.compat_models import to_model

    manifest = pod_manifest(name, role, service_account, reserved_millicpu, reserved_memmb, efa_device_count)
    return cast("V1Pod", to_model(manifest, "V1Pod"))


def pod_manifest(
    name: str,
    role: Role,
    service_account: str | None,
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
    efa_device_count: int | None = None,
) -> dict[str, Any]:
    """:func:`role_to_pod`'s pod as a plain ``v1`` Pod manifest (the API's camelCase keys)."""
    if efa_device_count is not None:
        devices = {**role.resource.devices, EFA_DEVICE: efa_device_count}
        role = dataclasses.replace(role, resource=dataclasses.replace(role.resource, devices=devices))
    opts = PodOpts(reserved_millicpu=reserved_millicpu, reserved_memmb=reserved_memmb)
    volumes, mounts, privileged = role_volumes(role)
    for volume in volumes:  # as TorchX: read-only is the mount's, the claim itself is not marked
        if "persistentVolumeClaim" in volume:
            volume["persistentVolumeClaim"] = {"claimName": volume["persistentVolumeClaim"]["claimName"]}
    container: dict[str, Any] = {
        "name": name,
        "image": role.image,
        "command": [role.entrypoint, *role.args],
        "env": [{"name": key, "value": value} for key, value in role.env.items()],
        "resources": resources(role, opts),
        "ports": [{"name": port_name, "containerPort": port} for port_name, port in role.port_map.items()],
        "volumeMounts": mounts,
        "securityContext": {"privileged": True} if privileged else {},
    }
    spec: dict[str, Any] = {
        "containers": [container],
        "restartPolicy": "Never",
        "volumes": volumes,
        "nodeSelector": placement(role, opts).get("nodeSelector", {}),
    }
    if service_account is not None:
        spec["serviceAccountName"] = service_account
    return {"metadata": {"annotations": {ANNOTATION_ISTIO_SIDECAR: "false"}, "labels": {}}, "spec": spec}


def pod_labels(app: AppDef, role_idx: int, role: Role, replica_id: int, app_id: str) -> dict[str, str]:
    """The labels of replica ``replica_id`` of ``app.roles[role_idx]`` for the app named ``app_id``
    (its Kubernetes name; a ``namespace:`` prefix is dropped).

    Difference from upstream: the values are our scheduler's: ``role-name`` is the role's
    DNS-label slug, and there is no ``role-index`` label (it is an annotation).
    ``role`` is accepted for upstream's signature; the role is ``app.roles[role_idx]``.
    """
    name = app_id.rpartition(":")[2]
    return _factories(app, name, PodOpts(), "Never")[role_idx].labels(replica_id)


#: the run options as TorchX declares them: a TypedDict (``KubernetesOpts({"queue": "q"})`` or ``KubernetesOpts(queue="q")``)
KubernetesOpts = typed_dict(_KubernetesOpts, "KubernetesOpts", __name__)

__all__ = [
    "RESERVED_MEMMB",
    "RESERVED_MILLICPU",
    "LABEL_APP_NAME",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_NAME",
    "LABEL_VERSION",
    "KubernetesJob",
    "KubernetesOpts",
    "KubernetesScheduler",
    "app_to_resource",
    "create_scheduler",
    "pod_labels",
    "pod_manifest",
    "role_to_pod",
]
