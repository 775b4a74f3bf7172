"""The dashboard's guard: token, Host and cross-site checks, and the security headers of every answer.

* With a token (required for any bind but loopback), every request needs it: an
  ``Authorization: Bearer TOKEN`` header, or the cookie that opening ``/?token=TOKEN`` sets
  (``HttpOnly``, ``SameSite=Strict``; the answer redirects to the URL without the token).
* Without one (loopback only), the ``Host`` header must name a loopback host, so a web page that
  re-points its own DNS name at 127.0.0.1 (DNS rebinding) cannot read the API.
* State-changing requests (anything but GET/HEAD/OPTIONS) from a browser must be same-origin:
  ``Sec-Fetch-Site`` must be ``same-origin`` or ``none`` and ``Origin``, when sent, must be this
  server's. Clients that send neither header are not browsers (curl, scripts) and pass.
* Every answer forbids framing, inline scripts and loading anything from elsewhere (CSP).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        b" connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


def is_loopback(host: str) -> bool:
    """True if ``host`` (a name or an address) only reaches this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cookie_name(port: int) -> str:
    """The token cookie of the dashboard on ``port`` (cookies are per host, not per port)."""
    return f"torchx_dashboard_{port}"


def _host_name(host_header: str) -> str:
    """``127.0.0.1`` of ``127.0.0.1:8620``, ``::1`` of ``[::1]:8620``."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class Guard:
    """ASGI middleware doing the checks above in front of ``app``.

    Args:
        app: the dashboard
        token: the token every request needs (None: loopback-only, no token)
        port: the port served (names the cookie)
    """

    def __init__(self, app: ASGIApp, token: str | None, port: int) -> None:
        self.app = app
        self.token = token
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        headers = Headers(scope=scope)
        method = scope["method"]
        refusal = self._refusal(scope, headers, method)
        if refusal is not None:
            status, text = refusal
            await _send_json(send_with_headers, status, {"error": text})
            return
        if self.token is not None and method == "GET":
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if "token" in query and hmac.compare_digest(query["token"], self.token):
                del query["token"]
                path = scope.get("raw_path") or scope["path"].encode()
                location = path.decode("latin-1") + (f"?{urlencode(query)}" if query else "")
                await _send_redirect(send_with_headers, location, self._set_cookie())
                return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope, headers: Headers, method: str) -> tuple[int, str] | None:
        """(status, reason) of a request to refuse, None to let it through."""
        host = headers.get("host", "")
        if self.token is None:
            if not is_loopback(_host_name(host)):
                return 403, f"Host {host!r} is not a loopback name: open the dashboard at 127.0.0.1 or localhost"
        elif not self._has_token(scope, headers):
            return 401, "this dashboard needs its token: open the URL it printed (with ?token=...) or send Bearer"
        if method not in SAFE_METHODS:
            site = headers.get("sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                return 403, f"cross-site request refused (Sec-Fetch-Site: {site})"
            origin = headers.get("origin")
            if origin is not None and origin != f"{scope.get('scheme', 'http')}://{host}":
                return 403, f"cross-origin request refused (Origin: {origin})"
        return None

    def _has_token(self, scope: Scope, headers: Headers) -> bool:
        assert self.token is not None
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip(), self.token):
            return True
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header carries no token
            return False
        morsel = cookies.get(self.cookie)
        if morsel is not None and hmac.compare_digest(morsel.value, self.token):
            return True
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        return scope["method"] == "GET" and hmac.compare_digest(query.get("token", ""), self.token)

    def _set_cookie(self) -> bytes:
        assert self.token is not None
        return f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode("latin-1")


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _send_redirect(send: Send, location: str, cookie: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", cookie),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
