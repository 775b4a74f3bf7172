"""``torchx.schedulers.kubernetes_mcad_scheduler``: upstream TorchX's module path for
``kubernetes_mcad``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from torchx.schedulers.structured_opts import typed_dict
from torchx.specs.roles import AppDef, Resource, Role
from torchx.specs.status import AppState

from torchx_sched_k8s.names import LABEL_ROLE_NAME
from torchx_sched_k8s.opts import MCADOpts
from torchx_sched_k8s.request import KubernetesRequest as KubernetesMCADJob
from torchx_sched_k8s.request import build_mcad
from torchx_sched_k8s.scheduler import KubernetesMCADScheduler
from torchx_sched_k8s.scheduler import create_mcad_scheduler as create_scheduler
from torchx_sched_k8s.status import MCAD_STATES

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


def get_tasks_status_description(status: Mapping[str, Any]) -> dict[str, int]:
    """The task counts of an AppWrapper's ``status``: ``running``, ``pending``, ``failed`` and
    ``Succeeded`` (MCAD's spelling), those present only."""
    return {key: int(status[key]) for key in ("running", "pending", "failed", "Succeeded") if key in status}


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
    "create_scheduler",
    "get_appwrapper_status",
    "get_port_for_service",
    "get_role_information",
    "get_tasks_status_description",
]
