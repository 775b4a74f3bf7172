"""Notifications under a receiver fault: a black hole on loopback that accepts every connection
and reads the request but never answers. Each POST times out on its own, every notification is
still tried, and each one not delivered is logged as dropped."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from typing import Any

import pytest
from torchx_managed import notify
from torchx_managed.notify import Notifier


class BlackHole:
    """Accepts connections on 127.0.0.1, records each request's JSON body, never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.events: list[str] = []
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:  # closed: the hole is shutting down
                    return
                data += chunk
            head, body = data.split(b"\r\n\r\n", 1)
            length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
            while len(body) < length:
                body += conn.recv(65536)
            self.events.append(json.loads(body)["event"])

    def close(self) -> None:
        """Stops serving and waits for the serving thread (a thread left blocked in accept would
        make every later local_cwd launch in this process spawn instead of fork)."""
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (a close alone does not)
        for c in self.held:
            c.shutdown(socket.SHUT_RDWR)
        self.thread.join(timeout=10)
        self.sock.close()
        for c in self.held:
            c.close()


def test_a_black_hole_receiver_does_not_block_the_rest(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(notify, "TIMEOUT", 1.0)
    threads_before = set(threading.enumerate())  # an earlier test's thread may still be ending
    hole = BlackHole()
    acked: list[str] = []
    try:
        n = Notifier(hole.url, acked.append)
        items: list[tuple[str, dict[str, Any]]] = [
            ("job:RUNNING", {"event": "job_state", "state": "RUNNING"}),
            ("attempt_started:0", {"event": "attempt_started", "attempt": 0}),
            ("attempt_ended:0", {"event": "attempt_ended", "attempt": 0, "state": "SUCCEEDED"}),
            ("job:SUCCEEDED", {"event": "job_state", "state": "SUCCEEDED"}),
        ]
        n.offer(items)
        with caplog.at_level(logging.WARNING, logger="torchx_managed.notify"):
            t0 = time.monotonic()
            n.close(4.0)
            took = time.monotonic() - t0
    finally:
        hole.close()
    assert took < 6.0  # bounded by close's timeout, not by the receiver
    assert not hole.thread.is_alive()
    # the notifier's sender ends too (its last POST times out): it leaves no thread behind
    deadline = time.monotonic() + 10
    while set(threading.enumerate()) - threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(threading.enumerate()) - threads_before == set(), threading.enumerate()
    assert acked == []
    # every notification was tried, in order, although none was ever answered
    firsts = [e for i, e in enumerate(hole.events) if i == 0 or e != hole.events[i - 1]]  # retries folded
    assert firsts == ["job_state", "attempt_started", "attempt_ended", "job_state"]
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 4, dropped
    assert '"state": "SUCCEEDED"' in dropped[-1]
