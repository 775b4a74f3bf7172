"""``notify``: one JSON POST per state change of a managed job and of each attempt.

The notifications are a function of the journal (:func:`pending`): the driver sends those not
yet marked ``notified`` in the journal, in order, from one background thread, retrying each
with a growing pause; a receiver that stays down is logged and skipped, never fails the job.
Each POST has its own timeout. When the driver stops, what is still queued shares the time left
(every notification gets at least one try), and each one that could not be delivered is logged
as dropped. A driver that is killed sends again, when resumed, what was not acknowledged (at
least once).
"""

from __future__ import annotations

import json
import logging
import math
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
#: seconds one POST may take (a receiver that accepts and never answers costs this much a try)
TIMEOUT = 10.0


def pending(state: JobState, handle: str) -> list[tuple[str, dict[str, Any]]]:
    """Every notification the journal implies that was not acknowledged: ``(key, payload)``."""
    out: list[tuple[str, dict[str, Any]]] = []

    def add(key: str, **payload: Any) -> None:
        if key not in state.notified:
            out.append((key, {"job": handle, **payload}))

    first = next((a for a in state.attempts if a.handle is not None), None)  # a failed submission never ran
    if first is not None:
        add("job:RUNNING", event="job_state", state="RUNNING", time=first.started)
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


def post(url: str, payload: dict[str, Any], deadline: Callable[[], float] = lambda: math.inf) -> bool:
    """POSTs ``payload`` as JSON, retried :data:`TRIES` times while ``deadline()`` (a
    :func:`time.monotonic` instant) is not reached, each try bounded by :data:`TIMEOUT`; the
    first try is always made. True once a 2xx answer came."""
    data = json.dumps(payload).encode()
    pause = FIRST_PAUSE
    for attempt in range(1, TRIES + 1):
        left = deadline() - time.monotonic()
        if attempt > 1 and left <= 0:
            break
        req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=max(0.1, min(TIMEOUT, left))) as resp:
                if 200 <= resp.status < 300:
                    return True
                why = f"HTTP {resp.status}"
        except Exception as e:  # any failure to deliver is retried, then logged
            why = str(e)
        logger.warning("notify %s (try %d/%d): %s: %s", payload.get("event"), attempt, TRIES, url, why)
        if attempt < TRIES:
            time.sleep(max(0.0, min(pause, deadline() - time.monotonic())))
            pause *= 2
    logger.error("notify %s: dropped after %d tries: %s: %s", payload.get("event"), attempt, url, _what(payload))
    return False


def _what(payload: dict[str, Any]) -> str:
    """One notification in a log line: its event, attempt and state."""
    return json.dumps({k: payload.get(k) for k in ("event", "attempt", "state") if payload.get(k) is not None})


class Notifier:
    """Sends notifications in order from one thread; ``acked(key)`` is called after each delivery."""

    def __init__(self, url: str, acked: Callable[[str], None]) -> None:
        self.url = url
        self.acked = acked
        self.sent: set[str] = set()
        self.queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self.stop_by = math.inf  # set by close(): when the queue must be done (time.monotonic())
        self.event_by = math.inf  # when the notification being sent must be done
        self.thread = threading.Thread(target=self._run, name="notify", daemon=True)
        self.thread.start()

    def offer(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Queues the notifications not queued before."""
        for key, payload in items:
            if key not in self.sent:
                self.sent.add(key)
                self.queue.put((key, payload))

    def close(self, timeout: float) -> None:
        """Sends what is queued (waiting at most ``timeout`` seconds, shared among the queued
        notifications so that each gets a try), logs each one not delivered, then stops."""
        self.stop_by = time.monotonic() + timeout
        self.event_by = min(self.event_by, self._share())
        self.queue.put(None)
        self.thread.join(timeout + 1.0)
        while True:  # the thread is still in a POST: what is left will not be sent
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                logger.error("notify %s: dropped (the driver stopped first): %s", item[1].get("event"), _what(item[1]))

    def _share(self) -> float:
        """The deadline of the next notification once closing: the time left, split evenly."""
        if self.stop_by == math.inf:
            return math.inf
        now = time.monotonic()
        return now + max(0.0, self.stop_by - now) / max(1, self.queue.qsize())

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            key, payload = item
            self.event_by = self._share()
            if post(self.url, payload, lambda: self.event_by):
                try:
                    self.acked(key)
                except OSError as e:
                    logger.warning("cannot journal the delivery of %s: %s", key, e)
