"""The Kubernetes API calls torchx makes, as plain JSON over :mod:`torchx_sched_k8s.rest` (``http.client``).

Requests go out as plain dicts; answers come back as plain dicts (JSON as the server sent it,
no model objects). The ``kubernetes`` client package is not imported on these paths (its
~700 model modules made most of a first ``run()``): the kubeconfig is read by
:mod:`torchx_sched_k8s.kubeconfig`, which hands only credential plugins to the client library.
Every failure becomes one :class:`~torchx_sched_k8s.errors.KubernetesError` line. Imported
only by the scheduler.
"""

from __future__ import annotations

import http.client
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torchx_sched_k8s.errors import KubernetesError, api_error, config_error, connection_error
from torchx_sched_k8s.kubeconfig import KubeConfigError, endpoint_from_configuration, load_endpoint
from torchx_sched_k8s.request import Custom
from torchx_sched_k8s.rest import ApiError, Response, RestClient, path

MERGE_PATCH = "application/merge-patch+json"

#: where the objects of each kind torchx creates live: (API group path, resource plural)
KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "Service": (("api", "v1"), "services"),
    "Pod": (("api", "v1"), "pods"),
    "ServiceAccount": (("api", "v1"), "serviceaccounts"),
    "Secret": (("api", "v1"), "secrets"),
    "Job": (("apis", "batch", "v1"), "jobs"),
    "Deployment": (("apis", "apps", "v1"), "deployments"),
    "Role": (("apis", "rbac.authorization.k8s.io", "v1"), "roles"),
    "RoleBinding": (("apis", "rbac.authorization.k8s.io", "v1"), "rolebindings"),
    "Lease": (("apis", "coordination.k8s.io", "v1"), "leases"),
}

#: ``read_namespaced_pod_log``'s keyword arguments and the query parameters they are
_LOG_PARAMS = {
    "container": "container",
    "follow": "follow",
    "limit_bytes": "limitBytes",
    "previous": "previous",
    "since_seconds": "sinceSeconds",
    "since_time": "sinceTime",
    "tail_lines": "tailLines",
    "timestamps": "timestamps",
}


def _kind_path(kind: str, namespace: str, *rest: str) -> str:
    group, plural = KINDS[kind]
    return path(*group, "namespaces", namespace, plural, *rest)


def _custom_path(custom: Custom, namespace: str, *rest: str) -> str:
    group, version, plural = custom
    return path("apis", group, version, "namespaces", namespace, plural, *rest)


#: the transport of the kubeconfig as it is now, shared by every :class:`KubeApi` of the process
#: made without a client: a managed controller's 100 drivers each make a scheduler, and each
#: used to read the kubeconfig and hold a TLS context of its own (~80 KB a job)
_shared: list[tuple[tuple[object, ...], RestClient]] = []
_shared_lock = threading.Lock()


def _config_state() -> tuple[object, ...]:
    """What :func:`load_endpoint` reads: the environment naming the kubeconfig (or the pod's
    service account) and each kubeconfig file's identity and modification time."""
    paths = os.environ.get("KUBECONFIG") or "~/.kube/config"
    files: list[object] = []
    for p in paths.split(os.pathsep):
        try:
            st = os.stat(os.path.expanduser(p))
            files.append((p, st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            files.append((p, None))
    env = tuple(os.environ.get(k) for k in ("HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"))
    return (paths, env, tuple(files))


def _shared_rest() -> RestClient:
    """The process's transport for the kubeconfig as it is now (made again when it changed).

    Raises:
        KubeConfigError: no configuration, or a broken one
    """
    state = _config_state()
    with _shared_lock:
        if _shared and _shared[0][0] == state:
            return _shared[0][1]
        rest = RestClient(load_endpoint())
        _shared[:] = [(state, rest)]  # a client still using the one before keeps it
        return rest


class KubeApi:
    """Thin, error-translating access to the API server.

    Args:
        api_client: a configured ``kubernetes.client.ApiClient`` whose configuration (server,
            TLS, credentials) to use (default: the kubeconfig's current context, read on
            first use)
        timeout: seconds for connecting and for each answer (log streams excepted)
        shared: without ``api_client``, use the process's shared transport (its connections,
            :data:`~torchx_sched_k8s.rest.MAX_CONNECTIONS` at most, are shared with every
            scheduler of the process); False: a transport of its own, whose requests never wait
            behind theirs (a managed controller's Lease renewals behind its 100 drivers' polls)
    """

    def __init__(self, api_client: Any = None, timeout: float = 30.0, shared: bool = True) -> None:
        self._api_client = api_client
        self._rest: RestClient | None = None
        self._own = api_client is not None or not shared
        self.timeout = timeout

    @property
    def rest(self) -> RestClient:
        """The transport (set up on first use).

        Raises:
            KubernetesError: no usable configuration
        """
        if self._rest is None:
            try:
                if self._api_client is not None:
                    self._rest = RestClient(endpoint_from_configuration(self._api_client.configuration))
                elif self._own:
                    self._rest = RestClient(load_endpoint())
                else:
                    self._rest = _shared_rest()
            except KubeConfigError as e:
                raise config_error(e) from None
        return self._rest

    @property
    def host(self) -> str:
        """The API server's URL, for messages."""
        if self._rest is not None:
            return self._rest.endpoint.host
        if self._api_client is not None:
            return str(self._api_client.configuration.host)
        try:
            return self.rest.endpoint.host
        except KubernetesError:
            return "<unknown>"

    def close(self) -> None:
        """Closes the kept-alive connections (the process's shared transport is left to its
        other users)."""
        if self._rest is not None:
            if self._own:
                self._rest.close()
            self._rest = None

    @contextmanager
    def errors(self, action: str, namespace: str | None = None) -> Iterator[None]:
        """Turns HTTP, connection and configuration errors raised inside into :class:`KubernetesError`."""
        try:
            yield
        except ApiError as e:
            raise api_error(action, e.status, e.reason, e.body, namespace) from None
        except KubeConfigError as e:
            raise config_error(e) from None
        except (OSError, http.client.HTTPException) as e:
            raise connection_error(action, self.host, e) from None

    def _json(self, action: str, namespace: str | None, method: str, api_path: str, **kwargs: Any) -> dict[str, Any]:
        with self.errors(action, namespace):
            return self.rest.json(method, api_path, timeout=self.timeout, **kwargs)

    def _or_none(self, action: str, namespace: str | None, api_path: str) -> dict[str, Any] | None:
        try:
            return self._json(action, namespace, "GET", api_path)
        except KubernetesError as e:
            if e.status == 404:
                return None
            raise

    def _items(self, action: str, namespace: str, api_path: str, selector: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (
            self._json(action, namespace, "GET", api_path, query={"labelSelector": selector}).get("items") or []
        )
        return items

    # ------------------------------------------------------------------ create
    def create(self, obj: Any, custom: Custom | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Creates ``obj``, a plain dict: an object of a kind in :data:`KINDS`, or a custom
        object of ``custom``."""
        meta = obj["metadata"]
        ns = meta["namespace"]
        kind = obj["kind"]
        action = f"{'validate' if dry_run else 'create'} {kind} {meta.get('name')!r}"
        if custom is not None:
            api_path = _custom_path(custom, ns)
        elif kind in KINDS:
            api_path = _kind_path(kind, ns)
        else:
            raise KubernetesError(f"{action}: torchx does not create {kind} objects without a custom resource type")
        return self._json(action, ns, "POST", api_path, body=obj, query={"dryRun": "All" if dry_run else None})

    # ------------------------------------------------------------------ read
    def list_jobs(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """batch/v1 Jobs matching ``selector``."""
        return self._items(f"list Jobs ({selector})", namespace, _kind_path("Job", namespace), selector)

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """Pods matching ``selector``."""
        return self._items(f"list Pods ({selector})", namespace, _kind_path("Pod", namespace), selector)

    def list_services(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """Services matching ``selector``."""
        return self._items(f"list Services ({selector})", namespace, _kind_path("Service", namespace), selector)

    def discover(self, group: str, version: str) -> dict[str, Any] | None:
        """The API server's discovery document of ``group/version`` (its APIResourceList), or
        None when the server does not serve that group version (no such CRD installed)."""
        return self._or_none(f"discover {group}/{version}", None, path("apis", group, version))

    def server_minor(self) -> int | None:
        """The API server's minor version (``20`` for v1.20.2; None when it does not say)."""
        code = self._json("read the server's version", None, "GET", "/version")
        digits = "".join(c for c in str(code.get("minor", "")) if c.isdigit())  # "27+" on some clouds
        return int(digits) if digits and str(code.get("major")) == "1" else None

    def get_custom(self, custom: Custom, namespace: str, name: str) -> dict[str, Any] | None:
        """One custom object, or None if it (or its resource type) does not exist."""
        return self._or_none(f"get {custom[2]}.{custom[0]} {name!r}", namespace, _custom_path(custom, namespace, name))

    def list_custom(self, custom: Custom, namespace: str, selector: str) -> list[dict[str, Any]]:
        """Custom objects matching ``selector`` ([] if the resource type is not installed)."""
        try:
            return self._items(f"list {custom[2]}.{custom[0]}", namespace, _custom_path(custom, namespace), selector)
        except KubernetesError as e:
            if e.status == 404:
                return []
            raise

    def get_deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One apps/v1 Deployment, or None if it does not exist."""
        return self._or_none(f"get Deployment {name!r}", namespace, _kind_path("Deployment", namespace, name))

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One coordination.k8s.io/v1 Lease, or None if it does not exist."""
        return self._or_none(f"get Lease {name!r}", namespace, _kind_path("Lease", namespace, name))

    def pod_log(self, namespace: str, pod: str, **kwargs: Any) -> Response:
        """The raw (streaming) log response of a pod; ``kwargs`` are ``read_namespaced_pod_log``'s
        (``container``, ``follow``, ``limit_bytes``, ``previous``, ``since_seconds``,
        ``since_time``, ``tail_lines``, ``timestamps``). The caller releases it."""
        unknown = set(kwargs) - set(_LOG_PARAMS)
        if unknown:
            raise TypeError(f"pod_log() got unexpected arguments {sorted(unknown)}")
        query = {_LOG_PARAMS[k]: v for k, v in kwargs.items()}
        # a followed log has no timeout: it streams, maybe silently, for as long as the container runs
        timeout = None if kwargs.get("follow") else self.timeout
        with self.errors(f"read log of pod {pod!r}", namespace):
            return self.rest.request(
                "GET", _kind_path("Pod", namespace, pod, "log"), query=query, timeout=timeout, stream=True
            )

    # ------------------------------------------------------------------ change
    def _patch(self, action: str, namespace: str, api_path: str, patch: dict[str, Any]) -> None:
        self._json(action, namespace, "PATCH", api_path, body=patch, content_type=MERGE_PATCH)

    def patch_job(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a Job."""
        self._patch(f"patch Job {name!r}", namespace, _kind_path("Job", namespace, name), patch)

    def patch_deployment(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a Deployment."""
        self._patch(f"patch Deployment {name!r}", namespace, _kind_path("Deployment", namespace, name), patch)

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a Secret (a key set to ``None`` in ``data`` is removed)."""
        self._patch(f"patch Secret {name!r}", namespace, _kind_path("Secret", namespace, name), patch)

    def patch_custom(self, custom: Custom, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a custom object."""
        self._patch(f"patch {custom[2]}.{custom[0]} {name!r}", namespace, _custom_path(custom, namespace, name), patch)

    def replace_lease(self, namespace: str, name: str, lease: Any) -> dict[str, Any]:
        """Replaces a Lease; the server refuses it (a :class:`KubernetesError` of status 409) when
        ``lease``'s ``metadata.resourceVersion`` is no longer the stored one."""
        return self._json(f"update Lease {name!r}", namespace, "PUT", _kind_path("Lease", namespace, name), body=lease)

    def _delete(self, action: str, namespace: str, api_path: str, **kwargs: Any) -> bool:
        """False if the object is gone (404) or was replaced (409 of a ``uid`` precondition)."""
        try:
            self._json(action, namespace, "DELETE", api_path, **kwargs)
        except KubernetesError as e:
            if e.status in (404, 409):
                return False
            raise
        return True

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        """Deletes one object of a kind in :data:`KINDS`; False if it is gone."""
        return self._delete(f"delete {kind} {name!r}", namespace, _kind_path(kind, namespace, name))

    def delete_job(self, namespace: str, name: str, uid: str | None = None) -> bool:
        """Deletes one Job (its pods in the background); False if it is gone or was replaced (``uid``)."""
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        return self._delete(f"delete Job {name!r}", namespace, _kind_path("Job", namespace, name), body=body)

    def delete_jobs(self, namespace: str, selector: str) -> None:
        """Deletes the Jobs matching ``selector`` (and, in the background, their pods)."""
        query = {"labelSelector": selector, "propagationPolicy": "Background"}
        self._json(f"delete Jobs ({selector})", namespace, "DELETE", _kind_path("Job", namespace), query=query)

    def delete_pods(self, namespace: str, selector: str) -> None:
        """Deletes the pods matching ``selector``."""
        query = {"labelSelector": selector}
        self._json(f"delete Pods ({selector})", namespace, "DELETE", _kind_path("Pod", namespace), query=query)

    def delete_services(self, namespace: str, selector: str) -> None:
        """Deletes the Services matching ``selector`` (one by one: v1.20 has no deletecollection for them)."""
        for svc in self.list_services(namespace, selector):
            name = svc["metadata"]["name"]
            self._delete(f"delete Service {name!r}", namespace, _kind_path("Service", namespace, name))

    def delete_custom(self, custom: Custom, namespace: str, name: str) -> bool:
        """Deletes a custom object (dependents in the background); False if it does not exist."""
        try:
            self._json(
                f"delete {custom[2]}.{custom[0]} {name!r}",
                namespace,
                "DELETE",
                _custom_path(custom, namespace, name),
                query={"propagationPolicy": "Background"},
            )
        except KubernetesError as e:
            if e.status == 404:
                return False
            raise
        return True
