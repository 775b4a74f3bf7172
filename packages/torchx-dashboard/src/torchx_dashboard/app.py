"""The Starlette app: the JSON API, the log stream and the page.

    GET    /api/config                      read_only, schedulers, whether sweeps are installed
    GET    /api/jobs?scheduler=&state=&q=&sort=&offset=&limit=
    GET    /api/jobs/{handle}?request=0     status, roles, replicas, request (not with 0), tracker, attempts
    GET    /api/jobs/{handle}/logs?role=&replica=&regex=&since=&follow=1
    POST   /api/jobs/{handle}/cancel
    DELETE /api/jobs/{handle}
    GET    /api/sweeps, /api/sweeps/{id}

A handle in a path is one percent-encoded segment (``local_cwd%3A%2F%2Ftorchx%2Fecho-x1``): the
routes read it from the raw path, before ``%2F`` becomes ``/``. ``follow=1`` answers Server-Sent
Events: ``data: {"line": ...}`` per line, then ``event: end`` with the job's state.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from importlib.resources import files
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp
from torchx.schedulers.capabilities import UnsupportedFeatureError

from torchx_dashboard import sweeps
from torchx_dashboard.jobs import BadRequest, Forbidden, JobList, JobService, ListQuery, NotFound
from torchx_dashboard.security import Guard

log = logging.getLogger("torchx_dashboard")
STATIC = files("torchx_dashboard") / "static"
#: SSE comment sent when a followed log is quiet this long (finds closed connections)
KEEPALIVE_S = 15.0


def json_response(data: Any, status: int = 200) -> Response:
    """JSON of ``data`` (values JSON cannot hold are written as text)."""
    body = json.dumps(data, default=str, ensure_ascii=False)
    return Response(body, status_code=status, media_type="application/json")


def _segments(request: Request, prefix: str) -> list[str]:
    """The percent-decoded path segments after ``prefix`` (from the raw path: ``%2F`` stays in its segment)."""
    raw: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
    rest = raw.decode("latin-1")[len(prefix) :]
    return [unquote(s) for s in rest.split("/")]


class Dashboard:
    """The endpoints over a :class:`JobService` (and sweeps, when installed)."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self.sweeps = sweeps.SweepService(service.runner) if sweeps.available() else None

    async def config(self, request: Request) -> Response:
        return json_response(
            {
                "read_only": self.service.read_only,
                "schedulers": self.service.schedulers,
                "sweeps": self.sweeps is not None,
            }
        )

    async def jobs(self, request: Request) -> Response:
        started = time.perf_counter()
        query = ListQuery.parse(request.query_params)
        result = await run_in_threadpool(self._list, query)
        response = json_response(result.as_json())
        response.headers["server-timing"] = f"list;dur={(time.perf_counter() - started) * 1000:.1f}"
        return response

    def _list(self, query: ListQuery) -> JobList:
        """The jobs, sweeps' trials nested under their sweep."""
        return self.service.list_jobs(query, self.sweeps.groups() if self.sweeps is not None else ())

    async def job(self, request: Request) -> Response:
        parts = _segments(request, "/api/jobs/")
        handle, action = parts[0], "/".join(parts[1:])
        if not handle:
            raise BadRequest("no app handle in the path: /api/jobs/{percent-encoded handle}")
        method = request.method
        if action == "" and method == "GET":
            with_request = request.query_params.get("request", "1") not in ("0", "false")
            return json_response(await run_in_threadpool(self.service.job, handle, with_request))
        if action == "" and method == "DELETE":
            return json_response(await run_in_threadpool(self.service.delete, handle))
        if action == "cancel" and method == "POST":
            return json_response(await run_in_threadpool(self.service.cancel, handle))
        if action == "logs" and method == "GET":
            return await self.logs(request, handle)
        if action in ("", "cancel", "logs"):
            return json_response({"error": f"{method} is not allowed on this path"}, 405)
        raise NotFound(f"no such path: /api/jobs/{{handle}}/{action} (there are /logs and /cancel)")

    async def logs(self, request: Request, handle: str) -> Response:
        params = request.query_params
        follow = params.get("follow", "0") not in ("", "0", "false")
        lines = await run_in_threadpool(self.service.log_lines, handle, params, follow)
        if not follow:
            return StreamingResponse(lines, media_type="text/plain; charset=utf-8")
        return StreamingResponse(
            self._events(lines, handle),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def _events(self, lines: Iterator[str], handle: str) -> AsyncIterator[str]:
        """Server-Sent Events of ``lines`` (read by a thread: a log follow blocks), then the end state."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        stop = threading.Event()

        def pump() -> None:
            try:
                for line in lines:
                    if stop.is_set():
                        return
                    loop.call_soon_threadsafe(queue.put_nowait, ("line", line))
            except Exception as e:
                loop.call_soon_threadsafe(queue.put_nowait, ("error", str(e) or type(e).__name__))
            loop.call_soon_threadsafe(queue.put_nowait, ("end", ""))

        threading.Thread(target=pump, name="torchx-dashboard-log", daemon=True).start()
        try:
            yield ": following\n\n"
            while True:
                try:
                    kind, value = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                chunk = []
                while True:  # what came in together goes out together
                    if kind == "line":
                        chunk.append(f"data: {json.dumps({'line': value.rstrip(chr(10))})}\n\n")
                    elif kind == "error":
                        chunk.append(f"event: error\ndata: {json.dumps({'error': value})}\n\n")
                    else:
                        state = await run_in_threadpool(self.service.end_state, handle)
                        chunk.append(f"event: end\ndata: {json.dumps({'state': state})}\n\n")
                        yield "".join(chunk)
                        return
                    if queue.empty() or len(chunk) >= 500:
                        break
                    kind, value = queue.get_nowait()
                yield "".join(chunk)
        finally:
            stop.set()

    async def sweep_list(self, request: Request) -> Response:
        if self.sweeps is None:
            raise NotFound("torchx-sweep is not installed: pip install torchx-sweep")
        return json_response({"sweeps": await run_in_threadpool(self.sweeps.list)})

    async def sweep(self, request: Request) -> Response:
        if self.sweeps is None:
            raise NotFound("torchx-sweep is not installed: pip install torchx-sweep")
        parts = _segments(request, "/api/sweeps/")
        if len(parts) != 1 or not parts[0]:
            raise NotFound("no such path: /api/sweeps/{sweep id or percent-encoded handle}")
        return json_response(await run_in_threadpool(self.sweeps.get, parts[0]))

    async def index(self, request: Request) -> Response:
        return Response(
            (STATIC / "index.html").read_bytes(),
            media_type="text/html; charset=utf-8",
            headers={"cache-control": "no-store"},
        )


async def _bad_request(request: Request, exc: Exception) -> Response:
    return json_response({"error": str(exc)}, 400)


async def _not_found(request: Request, exc: Exception) -> Response:
    return json_response({"error": str(exc).strip("'\"")}, 404)


async def _forbidden(request: Request, exc: Exception) -> Response:
    return json_response({"error": str(exc)}, 403)


async def _failed(request: Request, exc: Exception) -> Response:
    log.error("torchx dashboard: %s %s failed", request.method, request.url.path, exc_info=exc)
    return json_response({"error": f"{type(exc).__name__}: {exc}"}, 500)


def create_app(service: JobService, token: str | None = None, port: int = 0) -> ASGIApp:
    """The dashboard over ``service``, behind its guard (see :mod:`torchx_dashboard.security`).

    Args:
        service: what the dashboard shows and may do
        token: the token every request must carry (None: loopback only)
        port: the port it is served on (names the token cookie)
    """
    dash = Dashboard(service)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        service.close()

    app = Starlette(
        routes=[
            Route("/", dash.index),
            Route("/api/config", dash.config),
            Route("/api/jobs", dash.jobs),
            Route("/api/jobs/{rest:path}", dash.job, methods=["GET", "POST", "DELETE"]),
            Route("/api/sweeps", dash.sweep_list),
            Route("/api/sweeps/{rest:path}", dash.sweep),
            Mount("/static", StaticFiles(packages=[("torchx_dashboard", "static")]), name="static"),
        ],
        exception_handlers={
            BadRequest: _bad_request,
            UnsupportedFeatureError: _bad_request,
            NotFound: _not_found,
            Forbidden: _forbidden,
            Exception: _failed,
        },
        lifespan=lifespan,
    )
    return Guard(app, token, port)
