"""Binds the socket, decides the token, prints the URL and serves with uvicorn until interrupted."""

from __future__ import annotations

import secrets
import socket
import sys
import threading
from collections.abc import Sequence
from urllib.parse import quote

from torchx_dashboard.security import is_loopback


class DashboardSetupError(ValueError):
    """The dashboard cannot start as asked (the message says how to fix it)."""


def choose_token(host: str, token: str | None) -> str | None:
    """The token to require: ``token`` if given; a new one for a bind that is not loopback; else None."""
    if token is not None:
        if len(token) < 16:
            raise DashboardSetupError("--token must be at least 16 characters (or leave it out to get a generated one)")
        return token
    return None if is_loopback(host) else secrets.token_urlsafe(24)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port).

    Raises:
        DashboardSetupError: the address cannot be bound (in use, not this machine's)
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise DashboardSetupError(f"cannot resolve --host {host!r}: {e.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise DashboardSetupError(
            f"cannot listen on {host}:{port}: {e.strerror} (choose another with --port, or --port 0 for any free one)"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(host: str, port: int, token: str | None) -> str:
    """The URL to open (with the token, which the page turns into a cookie)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={quote(token)}" if token else "")


def serve(host: str, port: int, token: str | None, read_only: bool, schedulers: Sequence[str]) -> None:
    """Serves the dashboard until interrupted (prints its URL on stdout first).

    Raises:
        DashboardSetupError: bad option, unknown scheduler, or the address cannot be bound
    """
    import uvicorn
    from torchx.runner import get_runner

    from torchx_dashboard.app import create_app
    from torchx_dashboard.jobs import BadRequest, JobService

    required = choose_token(host, token)
    try:
        service = JobService(get_runner(), list(schedulers) or None, read_only)
    except BadRequest as e:
        raise DashboardSetupError(str(e)) from None
    sock = bind(host, port)
    threading.Thread(target=service.warm_up, name="torchx-dashboard-warm-up", daemon=True).start()
    port = sock.getsockname()[1]
    app = create_app(service, required, port)
    where = url_of(host, port, required)
    note = "" if is_loopback(host) else f" (bound to {host}: every request needs the token)"
    print(f"torchx dashboard: {where}{note}", flush=True)
    if read_only:
        print("torchx dashboard: read-only: cancel and delete are refused", flush=True)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=2, lifespan="on", ws="none"
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    print("torchx dashboard: stopped", file=sys.stderr, flush=True)
