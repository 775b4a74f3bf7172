"""The Kubernetes API calls torchx makes, through the official ``kubernetes`` client.

Requests go out as plain dicts through the client's API methods; answers come back as
plain dicts (JSON as the server sent it, no model objects). Every failure becomes one
:class:`~torchx_sched_k8s.errors.KubernetesError` line. Imported only by the scheduler.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from torchx_sched_k8s.errors import KubernetesError, api_error, config_error, connection_error
from torchx_sched_k8s.request import Custom

MERGE_PATCH = "application/merge-patch+json"


def load_api_client() -> k8s.ApiClient:
    """An API client from ``$KUBECONFIG``/``~/.kube/config``, or the pod's service account in a cluster."""
    cfg = k8s.Configuration()
    # read $KUBECONFIG now: the client reads it once, when first imported
    path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    try:
        k8s_config.load_kube_config(config_file=path, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except ConfigException:
        if not os.environ.get("KUBERNETES_SERVICE_HOST"):
            raise
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return k8s.ApiClient(cfg)


class KubeApi:
    """Thin, error-translating access to the API server.

    Args:
        api_client: a configured ``kubernetes.client.ApiClient`` (default: loaded from
            the kubeconfig on first use)
        timeout: seconds for connecting and for each answer (log streams excepted)
    """

    def __init__(self, api_client: k8s.ApiClient | None = None, timeout: float = 30.0) -> None:
        self._client = api_client
        self.timeout = timeout

    @property
    def client(self) -> k8s.ApiClient:
        """The API client (loaded on first use)."""
        if self._client is None:
            self._client = load_api_client()
        return self._client

    @property
    def host(self) -> str:
        """The API server's URL, for messages."""
        try:
            return str(self.client.configuration.host)
        except Exception:
            return "<unknown>"

    def close(self) -> None:
        """Closes the connection pool."""
        if self._client is not None:
            self._client.close()  # type: ignore[no-untyped-call]
            self._client = None

    @contextmanager
    def errors(self, action: str, namespace: str | None = None) -> Iterator[None]:
        """Turns client, HTTP and config errors raised inside into :class:`KubernetesError`."""
        try:
            yield
        except ApiException as e:
            raise api_error(action, e.status, e.reason, e.body, namespace) from None
        except ConfigException as e:
            raise config_error(e) from None
        except urllib3.exceptions.HTTPError as e:
            raise connection_error(action, self.host, e) from None

    def _json(self, action: str, namespace: str | None, call: Callable[[], Any]) -> dict[str, Any]:
        with self.errors(action, namespace):
            response = call()
            data = response.data
        parsed: dict[str, Any] = json.loads(data) if data else {}
        return parsed

    def _core(self) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(self.client)

    def _batch(self) -> k8s.BatchV1Api:
        return k8s.BatchV1Api(self.client)

    def _custom(self) -> k8s.CustomObjectsApi:
        return k8s.CustomObjectsApi(self.client)

    def _opts(self) -> dict[str, Any]:
        return {"_preload_content": False, "_request_timeout": self.timeout}

    # ------------------------------------------------------------------ create
    def create(self, obj: Any, custom: Custom | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Creates ``obj``, a plain dict (a Service, a batch/v1 Job, a Pod, or a custom object of ``custom``)."""
        meta = obj["metadata"]
        ns = meta["namespace"]
        kind = obj["kind"]
        action = f"{'validate' if dry_run else 'create'} {kind} {meta.get('name')!r}"
        extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        if custom is not None:
            group, version, plural = custom
            return self._json(
                action,
                ns,
                lambda: self._custom().create_namespaced_custom_object(
                    group, version, ns, plural, obj, **extra, **self._opts()
                ),
            )
        if kind == "Service":
            return self._json(
                action, ns, lambda: self._core().create_namespaced_service(ns, obj, **extra, **self._opts())
            )
        if kind == "Job":
            return self._json(action, ns, lambda: self._batch().create_namespaced_job(ns, obj, **extra, **self._opts()))
        if kind == "Pod":
            return self._json(action, ns, lambda: self._core().create_namespaced_pod(ns, obj, **extra, **self._opts()))
        creators: dict[str, Callable[..., Any]] = {
            "Deployment": lambda: k8s.AppsV1Api(self.client).create_namespaced_deployment,
            "ServiceAccount": lambda: self._core().create_namespaced_service_account,
            "Role": lambda: k8s.RbacAuthorizationV1Api(self.client).create_namespaced_role,
            "RoleBinding": lambda: k8s.RbacAuthorizationV1Api(self.client).create_namespaced_role_binding,
            "Lease": lambda: k8s.CoordinationV1Api(self.client).create_namespaced_lease,
        }
        if kind in creators:
            return self._json(action, ns, lambda: creators[kind]()(ns, obj, **extra, **self._opts()))
        raise KubernetesError(f"{action}: torchx does not create {kind} objects without a custom resource type")

    # ------------------------------------------------------------------ read
    def list_jobs(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """batch/v1 Jobs matching ``selector``."""
        items: list[dict[str, Any]] = (
            self._json(
                f"list Jobs ({selector})",
                namespace,
                lambda: self._batch().list_namespaced_job(namespace, label_selector=selector, **self._opts()),
            ).get("items")
            or []
        )
        return items

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """Pods matching ``selector``."""
        items: list[dict[str, Any]] = (
            self._json(
                f"list Pods ({selector})",
                namespace,
                lambda: self._core().list_namespaced_pod(namespace, label_selector=selector, **self._opts()),
            ).get("items")
            or []
        )
        return items

    def list_services(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """Services matching ``selector``."""
        items: list[dict[str, Any]] = (
            self._json(
                f"list Services ({selector})",
                namespace,
                lambda: self._core().list_namespaced_service(namespace, label_selector=selector, **self._opts()),
            ).get("items")
            or []
        )
        return items

    def discover(self, group: str, version: str) -> dict[str, Any] | None:
        """The API server's discovery document of ``group/version`` (its APIResourceList), or
        None when the server does not serve that group version (no such CRD installed)."""
        try:
            return self._json(
                f"discover {group}/{version}",
                None,
                lambda: self._custom().get_api_resources(group, version, **self._opts()),
            )
        except KubernetesError as e:
            if e.status == 404:
                return None
            raise

    def server_minor(self) -> int | None:
        """The API server's minor version (``20`` for v1.20.2; None when it does not say)."""
        code = self._json(
            "read the server's version", None, lambda: k8s.VersionApi(self.client).get_code(**self._opts())
        )
        digits = "".join(c for c in str(code.get("minor", "")) if c.isdigit())  # "27+" on some clouds
        return int(digits) if digits and str(code.get("major")) == "1" else None

    def get_custom(self, custom: Custom, namespace: str, name: str) -> dict[str, Any] | None:
        """One custom object, or None if it (or its resource type) does not exist."""
        group, version, plural = custom
        try:
            return self._json(
                f"get {plural}.{group} {name!r}",
                namespace,
                lambda: self._custom().get_namespaced_custom_object(
                    group, version, namespace, plural, name, **self._opts()
                ),
            )
        except KubernetesError as e:
            if e.status == 404:
                return None
            raise

    def list_custom(self, custom: Custom, namespace: str, selector: str) -> list[dict[str, Any]]:
        """Custom objects matching ``selector`` ([] if the resource type is not installed)."""
        group, version, plural = custom
        try:
            items: list[dict[str, Any]] = (
                self._json(
                    f"list {plural}.{group}",
                    namespace,
                    lambda: self._custom().list_namespaced_custom_object(
                        group, version, namespace, plural, label_selector=selector, **self._opts()
                    ),
                ).get("items")
                or []
            )
        except KubernetesError as e:
            if e.status == 404:
                return []
            raise
        return items

    def get_deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One apps/v1 Deployment, or None if it does not exist."""
        return self._or_none(
            f"get Deployment {name!r}",
            namespace,
            lambda: k8s.AppsV1Api(self.client).read_namespaced_deployment(name, namespace, **self._opts()),
        )

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One coordination.k8s.io/v1 Lease, or None if it does not exist."""
        return self._or_none(
            f"get Lease {name!r}",
            namespace,
            lambda: k8s.CoordinationV1Api(self.client).read_namespaced_lease(name, namespace, **self._opts()),
        )

    def _or_none(self, action: str, namespace: str, call: Callable[[], Any]) -> dict[str, Any] | None:
        try:
            return self._json(action, namespace, call)
        except KubernetesError as e:
            if e.status == 404:
                return None
            raise

    def pod_log(self, namespace: str, pod: str, **kwargs: Any) -> Any:
        """The raw (streaming) log response of a pod; ``kwargs`` are ``read_namespaced_pod_log``'s."""
        # a followed log has no timeout: it streams, maybe silently, for as long as the container runs
        timeout: Any = None if kwargs.get("follow") else self.timeout
        with self.errors(f"read log of pod {pod!r}", namespace):
            return self._core().read_namespaced_pod_log(
                pod, namespace, _preload_content=False, _request_timeout=timeout, **kwargs
            )

    # ------------------------------------------------------------------ change
    def patch_job(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a Job."""
        self._json(
            f"patch Job {name!r}",
            namespace,
            lambda: self._batch().patch_namespaced_job(
                name, namespace, patch, _content_type=MERGE_PATCH, **self._opts()
            ),
        )

    def patch_deployment(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a Deployment."""
        self._json(
            f"patch Deployment {name!r}",
            namespace,
            lambda: k8s.AppsV1Api(self.client).patch_namespaced_deployment(
                name, namespace, patch, _content_type=MERGE_PATCH, **self._opts()
            ),
        )

    def replace_lease(self, namespace: str, name: str, lease: Any) -> dict[str, Any]:
        """Replaces a Lease; the server refuses it (a :class:`KubernetesError` of status 409) when
        ``lease``'s ``metadata.resourceVersion`` is no longer the stored one."""
        return self._json(
            f"update Lease {name!r}",
            namespace,
            lambda: k8s.CoordinationV1Api(self.client).replace_namespaced_lease(name, namespace, lease, **self._opts()),
        )

    def patch_custom(self, custom: Custom, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patches a custom object."""
        group, version, plural = custom
        self._json(
            f"patch {plural}.{group} {name!r}",
            namespace,
            lambda: self._custom().patch_namespaced_custom_object(
                group, version, namespace, plural, name, patch, _content_type=MERGE_PATCH, **self._opts()
            ),
        )

    def delete_job(self, namespace: str, name: str, uid: str | None = None) -> bool:
        """Deletes one Job (its pods in the background); False if it is gone or was replaced (``uid``)."""
        body: Any = {"propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._json(
                f"delete Job {name!r}",
                namespace,
                lambda: self._batch().delete_namespaced_job(name, namespace, body=body, **self._opts()),
            )
        except KubernetesError as e:
            if e.status in (404, 409):
                return False
            raise
        return True

    def delete_jobs(self, namespace: str, selector: str) -> None:
        """Deletes the Jobs matching ``selector`` (and, in the background, their pods)."""
        self._json(
            f"delete Jobs ({selector})",
            namespace,
            lambda: self._batch().delete_collection_namespaced_job(
                namespace, label_selector=selector, propagation_policy="Background", **self._opts()
            ),
        )

    def delete_pods(self, namespace: str, selector: str) -> None:
        """Deletes the pods matching ``selector``."""
        self._json(
            f"delete Pods ({selector})",
            namespace,
            lambda: self._core().delete_collection_namespaced_pod(namespace, label_selector=selector, **self._opts()),
        )

    def delete_services(self, namespace: str, selector: str) -> None:
        """Deletes the Services matching ``selector`` (one by one: v1.20 has no deletecollection for them)."""
        for svc in self.list_services(namespace, selector):
            name = svc["metadata"]["name"]
            try:
                self._json(
                    f"delete Service {name!r}",
                    namespace,
                    lambda name=name: self._core().delete_namespaced_service(name, namespace, **self._opts()),  # type: ignore[misc]
                )
            except KubernetesError as e:
                if e.status != 404:
                    raise

    def delete_custom(self, custom: Custom, namespace: str, name: str) -> bool:
        """Deletes a custom object (dependents in the background); False if it does not exist."""
        group, version, plural = custom
        try:
            self._json(
                f"delete {plural}.{group} {name!r}",
                namespace,
                lambda: self._custom().delete_namespaced_custom_object(
                    group, version, namespace, plural, name, propagation_policy="Background", **self._opts()
                ),
            )
        except KubernetesError as e:
            if e.status == 404:
                return False
            raise
        return True
