"""``notify``: one JSON POST per state change of a managed job and of each attempt.

The notifications are a function of the journal (:func:`pending`): the driver sends those not
yet marked ``notified`` in the journal, in order, from one background thread, retrying each
with a growing pause; a receiver that stays down is logged and skipped, never fails the job.
A driver that is killed sends again, when resumed, what was not acknowledged (at least once).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from torchx_managed.journal import JobState

logger: logging.Logger = logging.getLogger("torchx_managed.notify")

#: tries per notification, and the pause before the first retry (doubling)
TRIES = 5
FIRST_PAUSE = 0.5
TIMEOUT = 10.0


def pending(state: JobState, handle: str) -> list[tuple[str, dict[str, Any]]]:
    """Every notification the journal implies that was not acknowledged: ``(key, payload)``."""
    out: list[tuple[str, dict[str, Any]]] = []

    def add(key: str, **payload: Any) -> None:
        if key not in state.notified:
            out.append((key, {"job": handle, **payload}))

    if state.attempts and state.attempts[0].handle is not None:
        add("job:RUNNING", event="job_state", state="RUNNING", time=state.attempts[0].started)
    for a in state.attempts:
        base = {"attempt": a.n, "scheduler": a.target, "handle": a.handle}
        if a.handle is not None:
            add(f"attempt_started:{a.n}", event="attempt_started", time=a.started, **base)
        if a.state is not None:
            add(
                f"attempt_ended:{a.n}",
                event="attempt_ended",
                state=a.state,
                cause=a.cause,
                exit_code=a.exit_code,
                reason=a.reason,
                time=a.ended,
                **base,
            )
    if state.final is not None:
        add(f"job:{state.final}", event="job_state", state=state.final, msg=state.msg, time=state.ended)
    return out


def post(url: str, payload: dict[str, Any]) -> bool:
    """POSTs ``payload`` as JSON, retried :data:`TRIES` times; True once a 2xx answer came."""
    data = json.dumps(payload).encode()
    pause = FIRST_PAUSE
    for attempt in range(1, TRIES + 1):
        req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                if 200 <= resp.status < 300:
                    return True
                why = f"HTTP {resp.status}"
        except Exception as e:  # any failure to deliver is retried, then logged
            why = str(e)
        logger.warning("notify %s (try %d/%d): %s: %s", payload.get("event"), attempt, TRIES, url, why)
        if attempt < TRIES:
            time.sleep(pause)
            pause *= 2
    logger.error("notify %s: gave up after %d tries: %s", payload.get("event"), TRIES, url)
    return False


class Notifier:
    """Sends notifications in order from one thread; ``acked(key)`` is called after each delivery."""

    def __init__(self, url: str, acked: Callable[[str], None]) -> None:
        self.url = url
        self.acked = acked
        self.sent: set[str] = set()
        self.queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="notify", daemon=True)
        self.thread.start()

    def offer(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Queues the notifications not queued before."""
        for key, payload in items:
            if key not in self.sent:
                self.sent.add(key)
                self.queue.put((key, payload))

    def close(self, timeout: float) -> None:
        """Sends what is queued (waiting at most ``timeout`` seconds), then stops."""
        self.queue.put(None)
        self.thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            key, payload = item
            if post(self.url, payload):
                try:
                    self.acked(key)
                except OSError as e:
                    logger.warning("cannot journal the delivery of %s: %s", key, e)
