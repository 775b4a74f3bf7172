"""Where the Kubernetes API server is and which credentials to send: an :class:`~.rest.Endpoint`
from ``$KUBECONFIG`` / ``~/.kube/config``, from the pod's service account, or from a
``kubernetes`` client ``Configuration``.

Kubeconfigs whose user authenticates with a token, a token file, a client certificate or a
user name and password (most clusters, and every in-cluster service account) are read here,
with the rules of the ``kubernetes`` client's ``load_kube_config``: files of ``$KUBECONFIG``
merged (the first file naming a cluster, context or user wins; the last ``current-context``
wins), paths relative to the file that names them, a ``*-data`` field before its file field.
Anything else (``exec`` credential plugins, ``auth-provider``) is handed to the client library,
whose import then costs its ~0.4 s once.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any

from torchx_sched_k8s.rest import Endpoint

#: the service account's files, mounted in every pod
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
#: seconds between two reads of a token file (a projected service account token rotates)
TOKEN_REREAD = 60.0


class KubeConfigError(Exception):
    """No usable configuration: the message says what is missing or wrong."""


def load_endpoint() -> Endpoint:
    """The endpoint of the current context of ``$KUBECONFIG`` (or ``~/.kube/config``); inside a
    pod with neither, its service account.

    Raises:
        KubeConfigError: no configuration, or a broken one
    """
    paths = os.environ.get("KUBECONFIG") or "~/.kube/config"
    merged = _merge([os.path.expanduser(p) for p in paths.split(os.pathsep) if p])
    if merged is None:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return in_cluster_endpoint()
        raise KubeConfigError(f"no kubeconfig at {paths}")
    cluster, user = _current(merged)
    if any(key in user for key in ("auth-provider",)) or ("exec" in user and not _has_token(user)):
        return _library_endpoint(paths)
    return _endpoint(cluster, user)


def in_cluster_endpoint() -> Endpoint:
    """The endpoint of the pod's own service account (``KUBERNETES_SERVICE_HOST``/``_PORT``)."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError("not in a pod: KUBERNETES_SERVICE_HOST/PORT are not set")
    ca = os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt")
    token = os.path.join(SERVICE_ACCOUNT_DIR, "token")
    for f in (ca, token):
        if not os.path.isfile(f):
            raise KubeConfigError(f"the service account file {f} does not exist")
    if ":" in host:
        host = f"[{host}]"
    return Endpoint(
        host=f"https://{host}:{port}",
        ssl_context=_ssl_context(ca_file=ca),
        headers=_bearer_from_file(token),
    )


def endpoint_from_configuration(cfg: Any) -> Endpoint:
    """The endpoint of a ``kubernetes.client.Configuration`` (a client passed to the scheduler,
    or one the library loaded); its API key is asked anew for each request, so refreshed
    credentials (``refresh_api_key_hook``) are sent."""
    ctx: ssl.SSLContext | None = None
    if str(cfg.host).startswith("https"):
        ctx = _ssl_context(
            ca_file=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
            verify=bool(cfg.verify_ssl),
        )

    def headers() -> Mapping[str, str]:
        out: dict[str, str] = {}
        for auth in cfg.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                out[auth["key"]] = auth["value"]
        if "authorization" not in out and getattr(cfg, "username", None):
            out["authorization"] = cfg.get_basic_auth_token()
        return out

    return Endpoint(
        host=str(cfg.host),
        ssl_context=ctx,
        headers=headers,
        server_hostname=getattr(cfg, "tls_server_name", None) or None,
        proxy=cfg.proxy or None,
    )


# ---------------------------------------------------------------------------------- kubeconfig
def _merge(paths: list[str]) -> dict[str, Any] | None:
    import yaml

    merged: dict[str, Any] | None = None
    for path in paths:
        if not os.path.exists(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                config = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise KubeConfigError(f"cannot read kubeconfig {path}: {e}") from None
        if not isinstance(config, dict):
            raise KubeConfigError(f"kubeconfig {path} is empty or not a mapping")
        if merged is None:
            merged = {"clusters": {}, "contexts": {}, "users": {}}
        base = os.path.dirname(os.path.abspath(path))
        for item in ("clusters", "contexts", "users"):
            for entry in config.get(item) or []:
                if isinstance(entry, dict) and "name" in entry and entry["name"] not in merged[item]:
                    merged[item][entry["name"]] = (entry, base)
        if "current-context" in config:
            merged["current-context"] = config["current-context"]
    return merged


def _current(merged: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    name = merged.get("current-context")
    if not name:
        raise KubeConfigError("the kubeconfig has no current-context; pick one with kubectl config use-context")
    if name not in merged["contexts"]:
        raise KubeConfigError(f"the kubeconfig has no context {name!r}")
    context = merged["contexts"][name][0].get("context") or {}
    cluster_name = context.get("cluster")
    if cluster_name not in merged["clusters"]:
        raise KubeConfigError(f"the kubeconfig's context {name!r} names no known cluster ({cluster_name!r})")
    entry, base = merged["clusters"][cluster_name]
    cluster = {**(entry.get("cluster") or {}), "_base": base}
    user: dict[str, Any] = {}
    user_name = context.get("user")
    if user_name and user_name in merged["users"]:
        entry, base = merged["users"][user_name]
        user = {**(entry.get("user") or {}), "_base": base}
    return cluster, user


def _has_token(user: Mapping[str, Any]) -> bool:
    return bool(user.get("token") or user.get("tokenFile"))


def _endpoint(cluster: Mapping[str, Any], user: Mapping[str, Any]) -> Endpoint:
    server = cluster.get("server")
    if not server:
        raise KubeConfigError("the kubeconfig's cluster has no server")
    host = str(server).rstrip("/")
    ctx: ssl.SSLContext | None = None
    if host.startswith("https"):
        with (
            _material(cluster, "certificate-authority") as ca,
            _material(user, "client-certificate") as cert,
            _material(user, "client-key") as key,
        ):
            ctx = _ssl_context(
                ca_file=ca, cert_file=cert, key_file=key, verify=not cluster.get("insecure-skip-tls-verify")
            )
    headers: Callable[[], Mapping[str, str]] = dict
    if user.get("token"):
        headers = _fixed({"authorization": f"Bearer {user['token']}"})
    elif user.get("tokenFile"):
        headers = _bearer_from_file(_resolve(user, str(user["tokenFile"])))
    elif "username" in user and "password" in user:
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode("latin-1")).decode()
        headers = _fixed({"authorization": f"Basic {basic}"})
    return Endpoint(
        host=host,
        ssl_context=ctx,
        headers=headers,
        server_hostname=cluster.get("tls-server-name") or None,
        proxy=cluster.get("proxy-url") or None,
    )


def _resolve(section: Mapping[str, Any], path: str) -> str:
    return os.path.normpath(os.path.join(str(section.get("_base", "")), os.path.expanduser(path)))


class _material:
    """``key-data`` (base64) or the file ``key`` names, as a file path for the ``ssl`` module:
    data goes to a private temporary file, removed on exit."""

    def __init__(self, section: Mapping[str, Any], key: str) -> None:
        self._data = section.get(f"{key}-data")
        self._file = _resolve(section, str(section[key])) if not self._data and section.get(key) else None
        self._tmp: str | None = None

    def __enter__(self) -> str | None:
        if self._data:
            try:
                content = base64.b64decode(str(self._data), validate=False)
            except ValueError as e:
                raise KubeConfigError(f"the kubeconfig's {self._data!r:.20} is not base64: {e}") from None
            fd, self._tmp = tempfile.mkstemp(prefix="torchx-kube-")
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            return self._tmp
        if self._file is not None and not os.path.isfile(self._file):
            raise KubeConfigError(f"the kubeconfig names a file that does not exist: {self._file}")
        return self._file

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            os.unlink(self._tmp)


# ------------------------------------------------------------------------------------ helpers
def _ssl_context(
    ca_file: str | None = None, cert_file: str | None = None, key_file: str | None = None, verify: bool = True
) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and host name
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca_file:
        ctx.load_verify_locations(cafile=ca_file)  # only the cluster's CA, as the client library trusts
    else:
        try:
            import certifi  # the client library's default trust store

            ctx.load_verify_locations(cafile=certifi.where())
        except ImportError:
            ctx.load_default_certs()
    if cert_file:
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as e:
            raise KubeConfigError(f"cannot load the kubeconfig's client certificate: {e}") from None
    return ctx


def _fixed(headers: Mapping[str, str]) -> Callable[[], Mapping[str, str]]:
    return lambda: headers


def _bearer_from_file(path: str) -> Callable[[], Mapping[str, str]]:
    """Headers with the token read from ``path``, read again every :data:`TOKEN_REREAD` seconds."""
    cache: dict[str, Any] = {"at": -TOKEN_REREAD, "headers": {}}

    def headers() -> Mapping[str, str]:
        now = time.monotonic()
        if now - cache["at"] >= TOKEN_REREAD:
            try:
                with open(path, encoding="utf-8") as f:
                    token = f.read().strip()
            except OSError as e:
                raise KubeConfigError(f"cannot read the token file {path}: {e.strerror}") from None
            cache["headers"] = {"authorization": f"Bearer {token}"} if token else {}
            cache["at"] = now
        result: Mapping[str, str] = cache["headers"]
        return result

    return headers


def _library_endpoint(paths: str) -> Endpoint:
    """The endpoint the ``kubernetes`` library loads (credential plugins and auth providers)."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    cfg = k8s.Configuration()
    try:
        k8s_config.load_kube_config(config_file=paths, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except ConfigException as e:
        raise KubeConfigError(str(e)) from None
    return endpoint_from_configuration(cfg)
