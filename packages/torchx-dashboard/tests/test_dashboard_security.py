"""The guard: token, Host and cross-site checks (in-process), a real non-loopback bind, and the CLI's refusals.

These need no scheduler: the guard answers before any route does.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient
from torchx.runner import Runner
from torchx_dashboard.app import create_app
from torchx_dashboard.jobs import JobService
from torchx_dashboard.security import cookie_name

TOKEN = "a-test-token-of-32-characters-xx"
BASE = "http://127.0.0.1:8620"
JOB = "/api/jobs/local_cwd%3A%2F%2Ftorchx%2Fnope/cancel"


def make_client(token: str | None, base_url: str = BASE) -> TestClient:
    service = JobService(Runner("torchx", {}))
    return TestClient(create_app(service, token, 8620), base_url=base_url, follow_redirects=False)


@pytest.fixture
def open_client() -> Iterator[TestClient]:
    with make_client(None) as c:
        yield c


@pytest.fixture
def token_client() -> Iterator[TestClient]:
    with make_client(TOKEN, "http://192.0.2.1:8620") as c:
        yield c


def test_loopback_without_token_answers_loopback_hosts_only(open_client: TestClient) -> None:
    assert open_client.get("/api/config").status_code == 200
    assert open_client.get("/api/config", headers={"host": "localhost:8620"}).status_code == 200
    assert open_client.get("/api/config", headers={"host": "[::1]:8620"}).status_code == 200
    rebound = open_client.get("/api/config", headers={"host": "evil.example:8620"})
    assert rebound.status_code == 403
    assert "not a loopback name" in rebound.json()["error"]


def test_every_answer_carries_the_security_headers(open_client: TestClient) -> None:
    for path in ("/", "/api/config", "/static/app.js", "/api/jobs/garbage"):
        headers = open_client.get(path).headers
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"


def test_token_is_required_on_every_path(token_client: TestClient) -> None:
    for path in ("/", "/api/config", "/api/jobs", "/static/app.js"):
        response = token_client.get(path)
        assert response.status_code == 401, path
        assert "needs its token" in response.json()["error"]
    assert token_client.get("/api/config", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert token_client.get("/api/config", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_tokened_url_sets_the_cookie_that_then_suffices(token_client: TestClient) -> None:
    opened = token_client.get("/", params={"token": TOKEN})
    assert opened.status_code == 303
    assert opened.headers["location"] == "/"
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(8620)}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert token_client.get("/api/config").status_code == 200  # the client keeps the cookie
    assert token_client.get("/", params={"token": "wrong"}).status_code == 200  # cookie still good, no redirect


def test_cross_site_state_changes_are_refused(open_client: TestClient) -> None:
    for headers in (
        {"origin": "http://evil.example"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
    ):
        response = open_client.post(JOB, headers=headers)
        assert response.status_code == 403, headers
        assert "refused" in response.json()["error"]
    # same-origin (and clients that are not browsers) reach the route: it answers 404 for a scheduler not shown
    same = {"origin": BASE, "sec-fetch-site": "same-origin"}
    assert open_client.post(JOB, headers=same).status_code == 404
    assert open_client.post(JOB).status_code == 404
    assert open_client.get("/api/config", headers={"sec-fetch-site": "cross-site"}).status_code == 200


def test_cross_site_is_refused_even_with_the_token(token_client: TestClient) -> None:
    bearer = {"authorization": f"Bearer {TOKEN}"}
    assert token_client.post(JOB, headers={**bearer, "origin": "http://evil.example"}).status_code == 403
    assert (
        token_client.delete(JOB[: -len("/cancel")], headers={**bearer, "sec-fetch-site": "cross-site"}).status_code
        == 403
    )


def test_a_non_loopback_bind_needs_the_generated_token(dashboard: Any) -> None:
    server = dashboard("--host", "0.0.0.0")
    assert "every request needs the token" in server.first_line
    assert "?token=" in server.url
    without = httpx.get(server.base + "api/config", timeout=10)
    assert without.status_code == 401
    with_token = httpx.get(server.url, timeout=10, follow_redirects=True)
    assert with_token.status_code == 200
    assert "torchx dashboard" in with_token.text
    token = server.url.split("token=", 1)[1]
    bearer = httpx.get(server.base + "api/config", headers={"authorization": f"Bearer {token}"}, timeout=10)
    assert bearer.status_code == 200
    assert server.stop() == 0


def test_a_given_token_is_used(dashboard: Any) -> None:
    server = dashboard("--host", "0.0.0.0", "--token", TOKEN)
    assert server.url.endswith(f"?token={TOKEN}")
    assert httpx.get(server.base + "api/config", timeout=10).status_code == 401
    assert httpx.get(server.base + "api/config", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--token", "short"], "--token must be at least 16 characters"),
        (["--port", "70000"], "--port must be between 0 and 65535"),
        (["-s", "no_such_scheduler"], "unknown scheduler(s) no_such_scheduler"),
        (["--host", "no-such-host.invalid"], "cannot resolve --host"),
    ],
)
def test_bad_options_are_one_line_and_exit_non_zero(args: list[str], says: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchx", "dashboard", *args], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_port_in_use_is_reported() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "torchx", "dashboard", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "--port 0" in proc.stderr
