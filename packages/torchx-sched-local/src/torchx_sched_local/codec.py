"""Roles to plain JSON data and back, so ``describe`` from another process returns the submitted roles."""

from __future__ import annotations

from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.roles import Resource, RetryPolicy, Role
from torchx.specs.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MOUNTS: dict[str, type[BindMount] | type[VolumeMount] | type[DeviceMount]] = {
    "bind": BindMount,
    "volume": VolumeMount,
    "device": DeviceMount,
}


def _mount_kind(mount: BindMount | VolumeMount | DeviceMount) -> str:
    return type(mount).__name__.replace("Mount", "").lower()


def role_to_dict(role: Role) -> dict[str, Any]:
    """Plain data for ``role`` (values JSON cannot hold are kept as their ``str``)."""
    res = role.resource
    return {
        "name": role.name,
        "image": role.image,
        "min_replicas": role.min_replicas,
        "base_image": role.base_image,
        "entrypoint": role.entrypoint,
        "args": list(role.args),
        "env": dict(role.env),
        "num_replicas": role.num_replicas,
        "max_retries": role.max_retries,
        "retry_policy": RetryPolicy(role.retry_policy).value,
        "resource": {
            "cpu": res.cpu,
            "gpu": res.gpu,
            "memMB": res.memMB,
            "capabilities": dict(res.capabilities),
            "devices": dict(res.devices),
            "tags": dict(res.tags),
        },
        "port_map": dict(role.port_map),
        "metadata": dict(role.metadata),
        "mounts": [{"kind": _mount_kind(m), **vars(m)} for m in role.mounts],
        "workspace": dict(role.workspace.projects) if role.workspace is not None else None,
    }


def role_from_dict(data: dict[str, Any]) -> Role:
    """The :class:`Role` that :func:`role_to_dict` described."""
    res = data["resource"]
    mounts = []
    for m in data.get("mounts", []):
        fields = dict(m)
        mounts.append(_MOUNTS[fields.pop("kind")](**fields))
    workspace = data.get("workspace")
    return Role(
        name=data["name"],
        image=data["image"],
        min_replicas=data.get("min_replicas"),
        base_image=data.get("base_image"),
        entrypoint=data["entrypoint"],
        args=list(data["args"]),
        env=dict(data["env"]),
        num_replicas=data["num_replicas"],
        max_retries=data["max_retries"],
        retry_policy=RetryPolicy(data["retry_policy"]),
        resource=Resource(
            cpu=res["cpu"],
            gpu=res["gpu"],
            memMB=res["memMB"],
            capabilities=dict(res["capabilities"]),
            devices=dict(res["devices"]),
            tags=dict(res["tags"]),
        ),
        port_map=dict(data["port_map"]),
        metadata=dict(data["metadata"]),
        mounts=mounts,
        workspace=Workspace(dict(workspace)) if workspace is not None else None,
    )
