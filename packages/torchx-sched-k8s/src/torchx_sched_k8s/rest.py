"""HTTP requests to the Kubernetes API server over the standard library's ``http.client``: the
transport :class:`~torchx_sched_k8s.kubeapi.KubeApi` uses.

Why not a client library: the ``kubernetes`` package imports its ~700 model modules whatever one
uses (about 0.4 s, most of a first ``run()``), and ``urllib3`` another ~30 ms; torchx sends and
reads plain JSON over a few kept-alive connections, which ``http.client`` does
(benchmark scenario 15; tested against the ``kubernetes`` client on the live API server). Where
the connection comes from (a kubeconfig, the pod's service account, or a ``kubernetes``
``Configuration``) is :mod:`torchx_sched_k8s.kubeconfig`'s job.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

JSON = "application/json"
#: connections a client has at most (streams have their own): a request waits for one to come
#: free (up to its timeout) rather than open more. A managed controller's 100 drivers, each asking
#: now and then, need a few, not one each; opening one per request beyond a few kept idle was a
#: TLS handshake each time and ~6 MB more in such a controller (issue 28)
MAX_CONNECTIONS = 8
#: errors of a kept-alive connection the server closed meanwhile: the request is sent again once
#: on a new connection (nothing of it reached the server)
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest)


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
        proxy: an HTTP proxy URL to go through (``CONNECT`` for an ``https`` server)
    """

    host: str
    ssl_context: ssl.SSLContext | None = None
    headers: Callable[[], Mapping[str, str]] = field(default=dict)
    server_hostname: str | None = None
    proxy: str | None = None


def path(*parts: str) -> str:
    """An API path from its segments, each percent-encoded (``path("api", "v1", "namespaces", ns)``)."""
    return "/" + "/".join(quote(p, safe="") for p in parts)


class Response:
    """An answer of the API server: ``status``, ``reason`` and :attr:`data` (the body; read at
    once unless the request streams, then read with :meth:`stream` or :attr:`data`, and
    :meth:`release_conn` after)."""

    def __init__(self, raw: http.client.HTTPResponse, conn: http.client.HTTPConnection, stream: bool) -> None:
        self.status = raw.status
        self.reason = raw.reason
        self._raw = raw
        self._conn: http.client.HTTPConnection | None = conn if stream else None
        self._data: bytes | None = None if stream else raw.read()

    @property
    def data(self) -> bytes:
        """The whole body (of a streamed answer: what is left of it, read now, as urllib3's)."""
        if self._data is None:
            self._data = self._raw.read()
        return self._data

    def stream(self, amt: int = 64 * 1024, decode_content: bool = True) -> Iterator[bytes]:
        """The body as it arrives, in pieces of at most ``amt`` bytes (``decode_content``: for
        ``urllib3``'s signature; torchx asks for no content encoding)."""
        while True:
            chunk = self._raw.read1(amt)
            if not chunk:
                return
            yield chunk

    def read(self) -> bytes:
        """The rest of the body."""
        return self.data

    def release_conn(self) -> None:
        """Closes a streamed answer's connection (a stream has a connection of its own)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _HTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that verifies the server against ``server_hostname`` (the
    kubeconfig's ``tls-server-name``) when given, else the host's name."""

    def __init__(self, host: str, port: int | None, context: ssl.SSLContext, server_hostname: str | None) -> None:
        super().__init__(host, port, context=context)
        self._context = context
        self._server_hostname = server_hostname

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP, and the proxy's CONNECT tunnel if any
        name = self._server_hostname or self._tunnel_host or self.host  # type: ignore[attr-defined]
        self.sock = self._context.wrap_socket(self.sock, server_hostname=name)


class RestClient:
    """Sends requests to one API server over kept-alive connections, each used by one request
    at a time (thread-safe).

    Args:
        endpoint: the server and credentials
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        url = urlsplit(endpoint.host)
        self._https = url.scheme == "https"
        self._host = url.hostname or ""
        self._port = url.port
        self._base = url.path.rstrip("/")
        self._proxy = urlsplit(endpoint.proxy) if endpoint.proxy else None
        self._idle: list[http.client.HTTPConnection] = []  # kept alive, free for the next request
        self._all: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)  # one per request in flight (not a stream)

    def _connect(self) -> http.client.HTTPConnection:
        host, port = (self._proxy.hostname or "", self._proxy.port) if self._proxy else (self._host, self._port)
        conn: http.client.HTTPConnection
        if self._https:
            ctx = self.endpoint.ssl_context or ssl.create_default_context()
            conn = _HTTPSConnection(host, port, ctx, self.endpoint.server_hostname)
            if self._proxy:
                conn.set_tunnel(self._host, self._port)
        else:
            conn = http.client.HTTPConnection(host, port)
        return conn

    def _checkout(self) -> http.client.HTTPConnection:
        """A kept-alive connection no request uses, else a new one."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        conn = self._connect()
        with self._lock:
            self._all.add(conn)
        return conn

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        """Keeps ``conn`` (its answer read whole) for the next request."""
        with self._lock:
            self._idle.append(conn)

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
    ) -> Response:
        """Sends one request; returns the answer (its body unread when ``stream``). While
        :data:`MAX_CONNECTIONS` requests are in flight it first waits for one to end, up to
        ``timeout`` seconds (a stream opens a connection of its own at once).

        Raises:
            ApiError: the server answered 400 or above (the body is read)
            OSError: the server cannot be reached or did not answer within ``timeout`` seconds
                (``ssl.SSLError``, ``TimeoutError``, ``ConnectionRefusedError`` ...), or no
                connection came free within it (``TimeoutError``)
            http.client.HTTPException: the server's answer is not HTTP
        """
        if stream:
            return self._send(method, api_path, query, body, content_type, timeout, stream)
        if not self._slots.acquire(timeout=timeout):
            raise TimeoutError(
                f"{MAX_CONNECTIONS} requests to {self.endpoint.host} stayed in flight for {timeout:g}s:"
                " no connection came free"
            )
        try:
            return self._send(method, api_path, query, body, content_type, timeout, stream)
        finally:
            self._slots.release()

    def _send(
        self,
        method: str,
        api_path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
        stream: bool,
    ) -> Response:
        target = self._base + api_path
        params = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if params:
            target += "?" + urlencode(params)
        if self._proxy and not self._https:
            target = f"http://{self._host}{f':{self._port}' if self._port else ''}{target}"
        headers = {"Accept": JSON, "User-Agent": "torchx", **self.endpoint.headers()}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for tries_left in (1, 0):
            conn = self._connect() if stream else self._checkout()
            reused = conn.sock is not None
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, target, body=data, headers=headers)
                raw = conn.getresponse()
            except _STALE:
                conn.close()
                if reused and tries_left:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            try:
                response = Response(raw, conn, stream)
            except BaseException:  # the answer's body did not arrive whole: the connection is spent
                conn.close()
                raise
            if not stream:  # its answer is read: the connection serves the next request
                self._checkin(conn)
            if response.status >= 400:
                body_read = response.data
                response.release_conn()
                raise ApiError(response.status, response.reason or "", body_read)
            return response
        raise AssertionError("unreachable")  # the loop returns or raises

    def json(self, method: str, api_path: str, **kwargs: Any) -> dict[str, Any]:
        """Sends one request and returns its JSON answer ({} for an empty one)."""
        data = self.request(method, api_path, **kwargs).data
        parsed: Any = json.loads(data) if data else {}
        return parsed if isinstance(parsed, dict) else {}

    def close(self) -> None:
        """Closes the kept-alive connections."""
        with self._lock:
            for conn in list(self._all):
                conn.close()
            self._all.clear()
            self._idle.clear()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
