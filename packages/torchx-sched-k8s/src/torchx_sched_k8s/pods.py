"""One role's pods as plain dicts: container, env, resources, mounts, ports, placement.

:class:`PodFactory` does the per-role work once (resources, volumes, placement, which
strings depend on the replica id) so that each replica costs a few small dicts; this is
what keeps a dry run of a thousand replicas within milliseconds.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from string import Template
from typing import Any

from torchx.specs.macros import RANK0_ENV
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.overlays import apply_overlay, get_overlay
from torchx.specs.roles import Role
from torchx.version import __version__ as torchx_version

from torchx_sched_k8s import names
from torchx_sched_k8s.opts import PULL_POLICIES, PodOpts

ENV_ROLE_NAME = "TORCHX_ROLE_NAME"
ENV_REPLICA_IDX = "TORCHX_REPLICA_IDX"
#: env values starting with this are pod field paths (``[FIELD_PATH]status.podIP``)
FIELD_PATH_PREFIX = "[FIELD_PATH]"
GPU_RESOURCE = "nvidia.com/gpu"
#: the overlay a role carries for its pods: ``set_overlay(role, *POD_OVERLAY, {...})``
POD_OVERLAY = ("kubernetes", "V1Pod")
#: resource capability keys that are not node labels
TOLERATIONS_CAPABILITY = "tolerations"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PORT_NAME_BAD = re.compile(r"[^a-z0-9-]+")


class PodSpecError(ValueError):
    """A role or option cannot be expressed as a Kubernetes pod."""


def rank0_host(first_role_slug: str, service: str, namespace: str) -> str:
    """DNS name of replica 0 of the first role: ``<slug>-0.<service>.<namespace>.svc``.

    Pods set ``hostname``/``subdomain`` and the app's headless Service is named
    ``service``, so the name resolves in any cluster domain (``svc`` + the search path).
    """
    return f"{first_role_slug}-0.{service}.{namespace}.svc"


def parse_toleration(spec: str) -> dict[str, str]:
    """A toleration from kubectl taint syntax: ``key=value:Effect``, ``key:Effect``, ``key=value`` or ``key``.

    Raises:
        PodSpecError: the effect is unknown or the key is empty
    """
    body, _, effect = spec.strip().partition(":")
    key, eq, value = body.partition("=")
    if not key.strip():
        raise PodSpecError(f"toleration {spec!r} has no key; use key=value:Effect, key:Effect or key=value")
    tol: dict[str, str] = {"key": key.strip(), "operator": "Equal" if eq else "Exists"}
    if eq:
        tol["value"] = value.strip()
    if effect:
        if effect.strip() not in _EFFECTS:
            raise PodSpecError(f"toleration {spec!r}: effect must be one of {', '.join(_EFFECTS)}, got {effect!r}")
        tol["effect"] = effect.strip()
    return tol


def port_name(name: str, port: int) -> str:
    """``name`` as a container port name (IANA service name: 1-15 of ``[a-z0-9-]``, with a letter)."""
    cleaned = re.sub("-+", "-", _PORT_NAME_BAD.sub("-", name.lower()))[:15].strip("-")
    if not cleaned or not any(c.isalpha() for c in cleaned):
        return f"p{port}"
    return cleaned


def named_ports(port_map: dict[str, int]) -> list[tuple[str, int]]:
    """(unique port name, port) pairs of a role's ``port_map``.

    Raises:
        PodSpecError: a port is not an int in 1..65535
    """
    out: list[tuple[str, int]] = []
    used: set[str] = set()
    for name, port in port_map.items():
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise PodSpecError(f"port_map[{name!r}] = {port!r} is not a port number (1-65535)")
        pname = port_name(name, port)
        if pname in used:
            pname = f"p{port}"
        used.add(pname)
        out.append((pname, port))
    return out


def _quantities(limit_millicpu: int, limit_mb: int, opts: PodOpts) -> tuple[dict[str, str], dict[str, str]]:
    """(limits, requests) for CPU and memory (``memMB`` as ``<n>M``, as TorchX sizes pods); requests keep
    ``reserved_*`` below limits when that leaves half."""
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if limit_millicpu > 0:
        req = limit_millicpu - max(opts.reserved_millicpu, 0)
        limits["cpu"] = f"{limit_millicpu}m"
        requests["cpu"] = f"{req if req * 2 >= limit_millicpu else limit_millicpu}m"
    if limit_mb > 0:
        req = limit_mb - max(opts.reserved_memmb, 0)
        limits["memory"] = f"{limit_mb}M"
        requests["memory"] = f"{req if req * 2 >= limit_mb else limit_mb}M"
    return limits, requests


def resources(role: Role, opts: PodOpts) -> dict[str, dict[str, str]]:
    """The container ``resources`` of a role: CPU, memory, ``nvidia.com/gpu`` and ``resource.devices``."""
    res = role.resource
    limits, requests = _quantities(int(res.cpu * 1000), int(res.memMB), opts)
    extended: dict[str, str] = {}
    if res.gpu > 0:
        extended[GPU_RESOURCE] = str(int(res.gpu))
    for device, count in res.devices.items():
        if not isinstance(count, int) or count < 0:
            raise PodSpecError(f"role {role.name!r}: device {device!r} count must be an int >= 0, got {count!r}")
        if count:
            extended[device] = str(count)
    limits.update(extended)
    requests.update(extended)
    out: dict[str, dict[str, str]] = {}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


def role_volumes(role: Role) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    """(volumes, volumeMounts, needs privileged) of a role's mounts plus a memory-backed /dev/shm."""
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    privileged = False
    for idx, mount in enumerate(role.mounts):
        vname = f"mount-{idx}"
        if isinstance(mount, BindMount):
            volumes.append({"name": vname, "hostPath": {"path": mount.src_path}})
            mounts.append({"name": vname, "mountPath": mount.dst_path, "readOnly": mount.read_only})
        elif isinstance(mount, VolumeMount):
            volumes.append(
                {"name": vname, "persistentVolumeClaim": {"claimName": mount.src, "readOnly": mount.read_only}}
            )
            mounts.append({"name": vname, "mountPath": mount.dst_path, "readOnly": mount.read_only})
        elif isinstance(mount, DeviceMount):
            # Kubernetes has no per-device cgroup rule: a host device needs a privileged container
            volumes.append({"name": vname, "hostPath": {"path": mount.src_path}})
            mounts.append({"name": vname, "mountPath": mount.dst_path, "readOnly": "w" not in mount.permissions})
            privileged = True
        else:
            raise PodSpecError(f"role {role.name!r}: unsupported mount {mount!r}")
    return volumes, mounts, privileged


def placement(role: Role, opts: PodOpts) -> dict[str, Any]:
    """nodeSelector and tolerations: from the options, then the resource's capabilities.

    Capabilities whose key looks like a label key (has a ``/``, e.g.
    ``node.kubernetes.io/instance-type``) become node selector entries; the capability
    ``tolerations`` (a list of kubectl-syntax strings) adds tolerations.
    """
    selector = dict(opts.node_selector or {})
    tolerations = [parse_toleration(t) for t in opts.tolerations or []]
    for key, value in role.resource.capabilities.items():
        if key == TOLERATIONS_CAPABILITY:
            items = [value] if isinstance(value, str) else list(value)
            tolerations.extend(parse_toleration(str(t)) for t in items)
        elif "/" in key:
            selector[key] = str(value)
    out: dict[str, Any] = {}
    if selector:
        out["nodeSelector"] = selector
    if tolerations:
        out["tolerations"] = tolerations
    return out


#: stands for the replica id while a string's macros are filled in (NUL never occurs in args or env)
_RID = "\x00"


@dataclass
class _Str:
    """A string of the role with its macros filled in except the replica id.

    ``parts`` is the string split where the replica id goes (one part: no replica id).
    """

    parts: tuple[str, ...]

    def resolve(self, replica_id: str) -> str:
        parts = self.parts
        return parts[0] if len(parts) == 1 else replica_id.join(parts)


class PodFactory:
    """Builds the pod template of each replica of one role.

    The parts that are the same for every replica (resources, volumes, ports,
    annotations, placement, constant env entries) are built once and *shared* by the
    replicas' dicts: replace them rather than edit them in place.

    Args:
        role: the role
        slug: the role's DNS-label slug (unique in the app)
        app_id: the app id (``namespace:name``), the value of ``macros.app_id``
        app_name: the app's Kubernetes name (label ``torchx.pytorch.org/app-name``)
        service: the headless Service the pods are a subdomain of
        rank0: the rank-0 DNS name (value of :data:`RANK0_ENV`)
        opts: run options
        restart_policy: the pods' ``restartPolicy``
        index: the role's position in the app
    """

    def __init__(
        self,
        role: Role,
        slug: str,
        app_id: str,
        app_name: str,
        service: str,
        rank0: str,
        opts: PodOpts,
        restart_policy: str = "Never",
        index: int = 0,
    ) -> None:
        self.role = role
        self.slug = slug
        self.service = service
        self._mapping = {"img_root": "", "app_id": app_id, "rank0_env": RANK0_ENV, "base_img_root": "DEPRECATED"}
        self._command = self._str(role.entrypoint)
        self._args = [self._str(a) for a in role.args]
        env_strs = {ENV_ROLE_NAME: role.name, ENV_REPLICA_IDX: "${replica_id}", RANK0_ENV: rank0}
        env_strs.update(role.env)
        #: each entry: a shared constant env dict, or (name, string) resolved per replica
        self._env: list[dict[str, Any] | tuple[str, _Str]] = []
        for key, value in env_strs.items():
            s = self._str(value)
            self._env.append((key, s) if len(s.parts) > 1 else _env_entry(key, s.parts[0]))
        self._labels = {
            names.LABEL_APP_NAME: app_name,
            names.LABEL_ROLE_NAME: slug,
            names.LABEL_VERSION: names.label_value(torchx_version),
            names.LABEL_K8S_NAME: "torchx",
            names.LABEL_K8S_INSTANCE: app_name,
            names.LABEL_K8S_MANAGED_BY: "torchx",
        }
        self.annotations: dict[str, str] = {
            names.ANNOTATION_ROLE: role.name,
            names.ANNOTATION_ROLE_INDEX: str(index),
            names.ANNOTATION_NUM_REPLICAS: str(role.num_replicas),
            names.ANNOTATION_MIN_REPLICAS: str(role.min_replicas or role.num_replicas),
            names.ANNOTATION_MAX_RETRIES: str(role.max_retries),
            names.ANNOTATION_RETRY_POLICY: role.retry_policy.value,
        }
        """The annotations of the role's pods (exact role name, replica counts, retries); shared."""
        self.ports: list[dict[str, Any]] = [{"name": n, "containerPort": p} for n, p in named_ports(role.port_map)]
        """The role's named container ports; shared."""
        volumes, mounts, privileged = role_volumes(role)
        self._container_tail: dict[str, Any] = {"resources": resources(role, opts), "volumeMounts": mounts}
        if self.ports:
            self._container_tail["ports"] = self.ports
        if opts.image_pull_policy:
            if opts.image_pull_policy not in PULL_POLICIES:
                raise PodSpecError(
                    f"image_pull_policy must be one of {', '.join(PULL_POLICIES)}, got {opts.image_pull_policy!r}"
                )
            self._container_tail["imagePullPolicy"] = opts.image_pull_policy
        if privileged:
            self._container_tail["securityContext"] = {"privileged": True}
        self._pod_tail: dict[str, Any] = {"volumes": volumes, **placement(role, opts)}
        if opts.service_account:
            self._pod_tail["serviceAccountName"] = opts.service_account
        if opts.priority_class:
            self._pod_tail["priorityClassName"] = opts.priority_class
        if opts.image_pull_secret:
            self._pod_tail["imagePullSecrets"] = [{"name": opts.image_pull_secret}]
        if opts.termination_grace_period is not None:
            self._pod_tail["terminationGracePeriodSeconds"] = opts.termination_grace_period
        self._restart_policy = restart_policy
        #: entrypoint + args: the whole argv is the container's ``command`` (no ``args``), as TorchX's pods
        self._argv = [self._command, *self._args]
        self._const_argv = [s.parts[0] for s in self._argv] if all(len(s.parts) == 1 for s in self._argv) else None
        self._overlay = get_overlay(role, *POD_OVERLAY)

    def _str(self, value: str) -> _Str:
        if "$" not in value:
            return _Str((value,))
        if "\x00" in value:
            raise PodSpecError(f"role {self.role.name!r}: NUL characters cannot be passed to a process: {value!r}")
        filled = Template(value).safe_substitute(self._mapping, replica_id=_RID)
        # the kubelet reads "$(VAR)" in command, args and env values and turns "$$" into "$": "$$" keeps a "$"
        return _Str(tuple(filled.replace("$", "$$").split(_RID)))

    @property
    def resources(self) -> dict[str, dict[str, str]]:
        """The container's ``resources`` (limits and requests); shared."""
        res: dict[str, dict[str, str]] = self._container_tail["resources"]
        return res

    @property
    def base_labels(self) -> dict[str, str]:
        """Labels every object of the app carries (a new dict)."""
        return {k: v for k, v in self._labels.items() if k != names.LABEL_ROLE_NAME}

    def labels(self, replica: int) -> dict[str, str]:
        """The labels of replica ``replica``'s objects (a new dict)."""
        labels = dict(self._labels)
        labels[names.LABEL_REPLICA_ID] = str(replica)
        return labels

    def hostname(self, replica: int) -> str:
        """The pod hostname of replica ``replica`` (``<slug>-<replica>``)."""
        return f"{self.slug}-{replica}"

    def container(self, replica: int) -> dict[str, Any]:
        """The container of replica ``replica``."""
        rid = str(replica)
        env = [e if type(e) is dict else _env_entry(e[0], e[1].resolve(rid)) for e in self._env]  # type: ignore[index,union-attr]
        container: dict[str, Any] = {
            "name": self.slug,
            "image": self.role.image,
            "command": self._const_argv or [s.resolve(rid) for s in self._argv],
            "env": env,
        }
        container.update(self._container_tail)
        return container

    def pod_spec(self, replica: int) -> dict[str, Any]:
        """The pod spec of replica ``replica``."""
        spec: dict[str, Any] = {
            "restartPolicy": self._restart_policy,
            "hostname": f"{self.slug}-{replica}",
            "subdomain": self.service,
            "enableServiceLinks": False,
            "containers": [self.container(replica)],
        }
        spec.update(self._pod_tail)
        return spec

    def template(self, replica: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
        """The pod template (``metadata`` + ``spec``) of replica ``replica``, with the role's
        ``V1Pod`` overlay (:mod:`torchx.specs.overlays`) merged in."""
        template: dict[str, Any] = {
            "metadata": {"labels": labels or self.labels(replica), "annotations": self.annotations},
            "spec": self.pod_spec(replica),
        }
        if self._overlay:
            # the replicas share sub-dicts (see the class doc): merge into a copy of its own;
            # torchx's labels win over the overlay's (status and cleanup select on them)
            template = copy.deepcopy(template)
            apply_overlay(template, self._overlay)
            template["metadata"].setdefault("labels", {}).update(labels or self.labels(replica))
        return template


def _env_entry(name: str, value: str) -> dict[str, Any]:
    """One env entry; values starting with ``[FIELD_PATH]`` read a pod field."""
    if value.startswith(FIELD_PATH_PREFIX):
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": value[len(FIELD_PATH_PREFIX) :]}}}
    return {"name": name, "value": value}
