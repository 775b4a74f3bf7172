"""A conditional write to a bucket journal whose reply is lost (the object is stored, the
connection drops before the answer): botocore sends it again, and the second try fails its
precondition. Such a write is the writer's own, not another's: an append is stored once (it was
written again at the next number), a lease renewal keeps the lease (it read as lost).

The fault is real: requests go to the live moto endpoint through a proxy on 127.0.0.1 that
forwards the chosen write and then closes the connection without answering.
"""

from __future__ import annotations

import http.client
import os
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from torchx.testing.buckets import list_objects, live_s3_prefix

pytestmark = pytest.mark.aws

BUCKET = "torchx-journal-live"


class _LossyProxy(ThreadingHTTPServer):
    """Forwards every request to ``upstream``; the reply of the first conditional PUT whose path
    contains ``self.drop`` (while set) never reaches the client."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        parsed = urllib.parse.urlsplit(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.drop: str | None = None
        self.dropped: list[str] = []


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _LossyProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        conn = http.client.HTTPConnection(*self.server.upstream, timeout=30)
        try:
            conn.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
            reply = conn.getresponse()
            data = reply.read()
        finally:
            conn.close()
        conditional = "If-None-Match" in self.headers or "If-Match" in self.headers
        drop = self.server.drop
        if self.command == "PUT" and conditional and drop is not None and drop in self.path:
            self.server.drop = None
            self.server.dropped.append(f"{self.path} -> {reply.status}")
            self.close_connection = True  # stored upstream; the client never hears it
            return
        self.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward


@pytest.fixture
def lossy(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, _LossyProxy]]:
    """A fresh journal prefix, and this process's S3 requests going through the proxy."""
    journal = live_s3_prefix(BUCKET)
    proxy = _LossyProxy(os.environ["AWS_ENDPOINT_URL"])
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.server_address[1]}")
    try:
        yield journal, proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(timeout=10)


def test_an_append_whose_reply_was_lost_is_stored_once(lossy: tuple[str, _LossyProxy]) -> None:
    from torchx_managed.journal_store import UrlStore

    journal, proxy = lossy
    store = UrlStore(journal)
    store.create("job1", {"name": "x"})
    store.append("job1", {"ev": "first"})
    proxy.drop = "/events/"
    store.append("job1", {"ev": "second"})
    assert len(proxy.dropped) == 1, proxy.dropped  # the fault happened
    store.append("job1", {"ev": "third"})
    fresh = UrlStore(journal)  # another reader, nothing cached
    assert [ev["ev"] for ev in fresh.events("job1")] == ["first", "second", "third"]
    assert len(list_objects(f"{journal}/job1/events")) == 3


def test_a_lease_renewal_whose_reply_was_lost_keeps_the_lease(lossy: tuple[str, _LossyProxy]) -> None:
    from torchx_managed.journal_store import ObjectLease, ObjectStore

    journal, proxy = lossy
    objects = ObjectStore(journal)
    lease = ObjectLease(objects, f"{journal}/driver.lease", "holder-a")
    assert lease.try_acquire()
    proxy.drop = "/driver.lease"
    assert lease.try_acquire(), "a renewal stored but unanswered read as a lost lease"
    assert len(proxy.dropped) == 1, proxy.dropped
    assert lease.valid()
    other = ObjectLease(objects, f"{journal}/driver.lease", "holder-b")
    assert not other.try_acquire()  # still held by a
    assert lease.try_acquire()  # and a renews on from the ETag it learned


def test_a_controller_pod_waits_for_another_controller_s_lease() -> None:
    """A ``controller=kubernetes`` pod (``wait``) whose journal's controller lease another
    controller holds waits for it; it used to return at once, and its idle loop scaled its
    Deployment to 0 and back to 1 over and over. A controller job (no ``wait``) exits at once."""
    import time

    from torchx_managed.controller import CONTROLLER_LEASE, Controller, _run_leased
    from torchx_managed.journal import ManagedStore
    from torchx_managed.journal_store import ObjectLease, ObjectStore

    journal = live_s3_prefix(BUCKET)
    other = ObjectLease(ObjectStore(journal), f"{journal}/{CONTROLLER_LEASE}", "controller elsewhere")
    assert other.acquire()
    other.keep(lambda: None)
    try:
        controller = Controller(ManagedStore(journal))
        stop = threading.Event()
        started = time.monotonic()
        assert _run_leased(controller, journal, "job", stop, wait=False) == 0
        assert time.monotonic() - started < 5
        codes: list[int] = []
        pod = threading.Thread(target=lambda: codes.append(_run_leased(controller, journal, "pod", stop, wait=True)))
        pod.start()
        pod.join(timeout=4)
        assert pod.is_alive() and not codes, codes
        stop.set()
        pod.join(timeout=10)
        assert codes == [0]
    finally:
        other.release()
