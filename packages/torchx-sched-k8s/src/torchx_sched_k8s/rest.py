"""HTTP requests to the Kubernetes API server over ``urllib3``: the transport :class:`KubeApi`
uses, without importing the ``kubernetes`` client.

The client package imports its ~700 model modules whatever one uses (about 0.4 s, most of a
first ``run()``), and torchx sends and reads plain JSON anyway. Where the connection comes from
(a kubeconfig, the pod's service account, or a ``kubernetes`` ``Configuration``) is
:mod:`torchx_sched_k8s.kubeconfig`'s job; this module only sends requests.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

JSON = "application/json"


class ApiError(Exception):
    """The API server answered with an HTTP error status."""

    def __init__(self, status: int, reason: str, body: bytes) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.body = body


@dataclass
class Endpoint:
    """Where the API server is and how to talk to it.

    Args:
        host: the server's URL, e.g. ``https://10.0.0.1:6443``
        ssl_context: the TLS settings (trusted CAs, client certificate); None for plain HTTP
        headers: returns the authentication headers of one request (a token may be renewed
            between requests)
        server_hostname: the name to verify the server's certificate against, when not the host's
        proxy: an HTTP(S) proxy URL to go through
        retries: urllib3's retries of a failed connection (None: its default, as the client
            library's)
    """

    host: str
    ssl_context: ssl.SSLContext | None = None
    headers: Callable[[], Mapping[str, str]] = field(default=dict)
    server_hostname: str | None = None
    proxy: str | None = None
    retries: int | None = None


def path(*parts: str) -> str:
    """An API path from its segments, each percent-encoded (``path("api", "v1", "namespaces", ns)``)."""
    return "/" + "/".join(quote(p, safe="") for p in parts)


class RestClient:
    """Sends requests to one API server through a pool of kept-alive connections (thread-safe).

    Args:
        endpoint: the server and credentials
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        pool_args: dict[str, Any] = {"maxsize": 8}
        if endpoint.retries is not None:
            pool_args["retries"] = endpoint.retries
        if endpoint.ssl_context is not None:
            pool_args["ssl_context"] = endpoint.ssl_context
            if endpoint.server_hostname:
                pool_args["server_hostname"] = endpoint.server_hostname
        self._pool: urllib3.PoolManager = (
            urllib3.ProxyManager(endpoint.proxy, **pool_args) if endpoint.proxy else urllib3.PoolManager(**pool_args)
        )

    def request(
        self,
        method: str,
        api_path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """Sends one request; returns the response (its body unread when ``stream``).

        Raises:
            ApiError: the server answered 400 or above (the body is read)
            urllib3.exceptions.HTTPError: the server cannot be reached or did not answer in time
        """
        url = self.endpoint.host.rstrip("/") + api_path
        params = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode(params)
        headers = {"Accept": JSON, "User-Agent": "torchx", **self.endpoint.headers()}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        response = self._pool.request(
            method,
            url,
            body=data,
            headers=headers,
            timeout=urllib3.Timeout(connect=timeout, read=timeout),
            preload_content=not stream,
            redirect=False,
        )
        if response.status >= 400:
            error = ApiError(response.status, response.reason or "", response.data if not stream else response.read())
            if stream:
                response.release_conn()
            raise error
        return response

    def json(self, method: str, api_path: str, **kwargs: Any) -> dict[str, Any]:
        """Sends one request and returns its JSON answer ({} for an empty one)."""
        data = self.request(method, api_path, **kwargs).data
        parsed: Any = json.loads(data) if data else {}
        return parsed if isinstance(parsed, dict) else {}

    def close(self) -> None:
        """Closes the kept-alive connections."""
        self._pool.clear()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
