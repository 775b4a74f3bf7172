"""The managed controller as a Kubernetes Deployment (``-cfg controller=kubernetes``).

One Deployment per journal (``replicas: 1``, ``strategy: Recreate``: Kubernetes starts a new pod
when its pod dies or its node is lost), in the namespace of the ``kubernetes`` target
(``-cfg namespace=``, else ``default``), with a ServiceAccount of its own and a Role that grants
what the controller's drivers do there (Jobs, pods and their logs, Services, Volcano Jobs) and
nothing else: reading and renewing its own Lease, and scaling its own Deployment to 0 when it has
had nothing to drive for a while (:func:`set_replicas`); the next submission or look at an
unfinished job scales it back to 1 (:func:`ensure`).

Fencing is the Lease (:mod:`torchx_managed.lease`) first, then the journal's file locks (or,
under an ``s3://`` journal, its lease object): a pod drives nothing until it holds both.

Under an ``s3://`` journal the pod mounts nothing of the journal's; it reaches the bucket with the
submitting machine's ``AWS_*`` credentials and endpoint (:data:`BUCKET_ENV`), kept in a Secret of
the same name that the Deployment owns (deleting the Deployment deletes it) and handed to the
container with ``envFrom``: they are in neither the Deployment nor the pod's command. With no
access key in the submitting environment no Secret is made: the pod's service account must reach
the bucket by itself (an IAM role for service accounts, a node role).

Reached through ``torchx_sched_k8s``'s :class:`~torchx_sched_k8s.kubeapi.KubeApi`.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from torchx.specs.runopts import InvalidRunConfigException
from torchx_sched_k8s.errors import KubernetesError
from torchx_sched_k8s.kubeapi import KubeApi

from torchx_managed.controller_record import controller_handle, record_controller
from torchx_managed.journal_store import is_url
from torchx_managed.lease import lease_object
from torchx_managed.options import CONTROLLER_ENV, ManagedOptions, controller_volume

logger: logging.Logger = logging.getLogger("torchx_managed.k8s_controller")

#: the label every controller object has, and the one naming its journal's controller
APP_LABEL, NAME_LABEL = "app.kubernetes.io/name", "torchx.pytorch.org/managed-controller"
APP = "torchx-managed-controller"
#: what the controller's drivers do in the namespace (a kubernetes target's Jobs and pods)
RULES: list[dict[str, Any]] = [
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get", "list", "patch", "delete", "deletecollection"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete", "deletecollection"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get", "list", "delete"]},
    {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["create", "get", "list", "patch", "delete"]},
]  # fmt: skip


#: what of the submitting environment reaches an ``s3://`` journal's bucket, in the pod's Secret
BUCKET_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
)
#: those of them that are no secret: given to the pod as plain values when no Secret is made
BUCKET_SETTINGS = BUCKET_ENV[3:]


def bucket_env(root: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The Secret's content for journal ``root``: the :data:`BUCKET_ENV` variables set here when
    ``root`` is a URL and an access key is set; else nothing (a path; or credentials the pod's
    service account gets by itself)."""
    if not is_url(root) or not environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    return {k: environ[k] for k in BUCKET_ENV if environ.get(k)}


def resource_name(root: str) -> str:
    """The name of the Deployment, ServiceAccount, Role, RoleBinding and Lease of the controller
    of journal ``root``."""
    return "torchx-controller-" + hashlib.sha256(root.encode()).hexdigest()[:12]


def namespace_of(opts: ManagedOptions) -> str:
    """The namespace of the controller: the ``kubernetes`` target's, else ``default``."""
    return str((opts.target_cfgs.get("kubernetes") or {}).get("namespace") or "default")


def handle_of(namespace: str, name: str) -> str:
    """What ``describe`` shows as the controller (``deployment NAMESPACE/NAME``)."""
    return f"deployment {namespace}/{name}"


def _is_loopback(url: str) -> bool:
    """True if ``url``'s host is a loopback address (or ``localhost``)."""
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _loopback_api(api: KubeApi) -> tuple[str, int] | None:
    """``(host, port)`` of the API server when it listens on a loopback address (a one-machine
    cluster): a pod reaches it only on the node's network, at that address."""
    parts = urlsplit(api.host)
    return (parts.hostname or "", parts.port or 443) if _is_loopback(api.host) else None


def check_endpoint(root: str, api: KubeApi, environ: Mapping[str, str] = os.environ) -> None:
    """Refuses an ``s3://`` journal whose endpoint is this machine's loopback when the API server
    is not: the controller's pod, on another machine, could not reach it.

    Raises:
        InvalidRunConfigException: one line
    """
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or ""
    if is_url(root) and endpoint and _is_loopback(endpoint) and _loopback_api(api) is None:
        raise InvalidRunConfigException(
            f"managed: journal={root}: its endpoint {endpoint} is this machine's loopback, which the controller's"
            f" pod on the cluster at {api.host} cannot reach; give an endpoint the cluster reaches"
            " (AWS_ENDPOINT_URL_S3) or a journal path the pod mounts",
            "journal",
        )


def objects(
    opts: ManagedOptions, root: str, namespace: str, api: KubeApi, secret: bool = False
) -> list[dict[str, Any]]:
    """The controller's ServiceAccount, Role, RoleBinding, Lease and Deployment (whose container
    reads the Secret named like it with ``envFrom`` when ``secret``; else, under a URL journal,
    gets the endpoint and region set here as plain values)."""
    name = resource_name(root)
    meta = {"name": name, "namespace": namespace, "labels": {APP_LABEL: APP, NAME_LABEL: name}}
    own_rules = [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [name], "verbs": ["get", "update"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [name], "verbs": ["get", "patch"]},
    ]  # fmt: skip
    env: list[dict[str, Any]] = [
        *({"name": k, "value": v} for k, v in CONTROLLER_ENV.items()),
        {"name": "TORCHX_CONTROLLER_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    pod: dict[str, Any] = {"serviceAccountName": name, "terminationGracePeriodSeconds": 30}
    loopback = _loopback_api(api)
    if loopback is not None:
        pod.update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
        env += [
            {"name": "KUBERNETES_SERVICE_HOST", "value": loopback[0]},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(loopback[1])},
        ]
    if not secret and is_url(root):
        env += [{"name": k, "value": os.environ[k]} for k in BUCKET_SETTINGS if os.environ.get(k)]
    mounts, volumes = [], []
    for i, entry in enumerate(opts.controller_mounts or ([] if is_url(root) else [root])):
        claim, path = controller_volume(entry)
        source: dict[str, Any] = (
            {"persistentVolumeClaim": {"claimName": claim}}
            if claim
            else {"hostPath": {"path": path, "type": "Directory"}}
        )
        volumes.append({"name": f"mount-{i}", **source})
        mounts.append({"name": f"mount-{i}", "mountPath": path})
    pod["volumes"] = volumes
    pod["containers"] = [
        {
            "name": "controller",
            "image": opts.controller_image,
            "imagePullPolicy": "IfNotPresent",
            "command": [
                opts.controller_python,
                "-m",
                "torchx_managed.controller",
                root,
                "--lease",
                f"{namespace}/{name}",
            ],
            "env": env,
            **({"envFrom": [{"secretRef": {"name": name}}]} if secret else {}),
            "volumeMounts": mounts,
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        }
    ]
    labels = {APP_LABEL: APP, NAME_LABEL: name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**meta, "annotations": {"torchx.pytorch.org/journal": root}},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},  # never two pods of it on purpose; the Lease fences the rest
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": [*RULES, *own_rules]},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
        lease_object(namespace, name),
        deployment,
    ]


def ensure(opts: ManagedOptions, root: str, api: KubeApi | None = None) -> str:
    """Makes the controller of journal ``root`` run: creates its objects the first time, scales
    its Deployment back to 1 when it scaled itself to 0; returns :func:`handle_of` it. Once a
    controller was made, a look from a machine that cannot reach the API server (it reads the
    shared journal only) is a warning, not an error.

    Raises:
        KubernetesError: the API server refused or is not reachable, and no controller was made
            for ``root`` yet (one line: e.g. no right to create Roles)
    """
    namespace, name = namespace_of(opts), resource_name(root)
    handle = handle_of(namespace, name)
    kube = api or KubeApi()
    try:
        check_endpoint(root, kube)
        _ensure(kube, opts, root, namespace, name)
    except Exception as e:
        if controller_handle(root) != handle:
            raise
        logger.warning("cannot check the controller %s of %s (%s); it goes on as it is", handle, root, e)
        return handle
    finally:
        if api is None:
            kube.close()
    if controller_handle(root) != handle:
        record_controller(root, handle)
    return handle


def _ensure(kube: KubeApi, opts: ManagedOptions, root: str, namespace: str, name: str) -> None:
    """Creates the controller's objects (the Secret first: the pod never starts without it), or
    writes the Secret anew and scales the Deployment back to 1 (its new pod reads the new
    credentials). A creation that fails deletes what this call created (no Secret is left
    behind without the Deployment that owns it)."""
    found = kube.get_deployment(namespace, name)
    credentials = bucket_env(root)
    if found is None:
        made: list[str] = []  # the kinds of the objects this call created, in order
        try:
            _create(kube, opts, root, namespace, name, credentials, made)
        except BaseException:
            _undo(kube, namespace, name, made)
            raise
        logger.info("created the controller deployment %s/%s for %s", namespace, name, root)
    elif not (found.get("spec") or {}).get("replicas"):
        if credentials and _reads_secret(found):
            put_secret(kube, namespace, name, credentials)
        kube.patch_deployment(namespace, name, {"spec": {"replicas": 1}})
        logger.info("scaled the controller deployment %s/%s back to 1", namespace, name)


def _create(
    kube: KubeApi,
    opts: ManagedOptions,
    root: str,
    namespace: str,
    name: str,
    credentials: Mapping[str, str],
    made: list[str],
) -> None:
    """Creates the controller's objects, appending to ``made`` the kind of each one it created
    (one kept from an earlier controller of this journal is used as it is)."""
    if credentials:
        if put_secret(kube, namespace, name, credentials):
            made.append("Secret")
    elif is_url(root):
        logger.warning(
            "AWS_ACCESS_KEY_ID is not set here: the controller %s/%s gets no credentials for %s (those of"
            " ~/.aws are not handed over); its service account must reach the bucket by itself",
            namespace,
            name,
            root,
        )
    for obj in objects(opts, root, namespace, kube, secret=bool(credentials)):
        created: dict[str, Any] | None
        try:
            created = kube.create(obj)
            made.append(obj["kind"])
        except KubernetesError as e:
            if e.status != 409:  # kept from an earlier controller of this journal
                raise
            created = kube.get_deployment(namespace, name) if obj["kind"] == "Deployment" else {}
        if obj["kind"] == "Deployment" and credentials:
            _own(kube, namespace, name, (created or {}).get("metadata") or {})


def _undo(kube: KubeApi, namespace: str, name: str, made: list[str]) -> None:
    """Deletes the objects named ``name`` of the kinds in ``made``, last made first; one that
    cannot be deleted is a warning (the error that made the creation fail is the one raised)."""
    for kind in reversed(made):
        try:
            kube.delete(kind, namespace, name)
        except Exception as e:
            logger.warning("cannot delete the %s %s/%s made for a controller that failed: %s", kind, namespace, name, e)


def put_secret(kube: KubeApi, namespace: str, name: str, credentials: Mapping[str, str]) -> bool:
    """Creates the Secret ``name`` holding ``credentials`` (True), or replaces what one kept
    holds (False; the :data:`BUCKET_ENV` keys not in ``credentials`` are removed: no stale
    session token)."""
    data = {k: base64.b64encode(v.encode()).decode() for k, v in credentials.items()}
    labels = {APP_LABEL: APP, NAME_LABEL: name}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "type": "Opaque",
        "data": data,
    }
    try:
        kube.create(secret)
    except KubernetesError as e:
        if e.status != 409:
            raise
        kube.patch_secret(namespace, name, {"data": {**{k: None for k in BUCKET_ENV}, **data}})
        return False
    return True


def _own(kube: KubeApi, namespace: str, name: str, deployment: Mapping[str, Any]) -> None:
    """Makes the Deployment (its ``metadata``) the owner of the Secret: Kubernetes' garbage
    collector deletes the Secret with it."""
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": deployment.get("uid")}
    kube.patch_secret(namespace, name, {"metadata": {"ownerReferences": [owner]}})


def _reads_secret(deployment: Mapping[str, Any]) -> bool:
    """True if the Deployment's container reads its Secret (``envFrom``)."""
    containers = ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return any(c.get("envFrom") for c in containers)


def set_replicas(api: KubeApi, namespace: str, name: str, replicas: int) -> None:
    """Sets the controller's Deployment to ``replicas`` (0 when idle, 1 when work came back)."""
    api.patch_deployment(namespace, name, {"spec": {"replicas": replicas}})
