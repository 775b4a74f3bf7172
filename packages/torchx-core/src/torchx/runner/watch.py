"""One loop that watches many apps to their end, for the detached drivers (torchx-managed's
attempts, torchx-sweep's trials).

:class:`AppWatcher` holds a set of app handles, each under a key of the caller's. Its
:meth:`~AppWatcher.wait` blocks until something may have happened, then returns what did as
typed events (:class:`Ended`, :class:`Unknown`, :class:`Answered`, :class:`Overdue`). How it
learns of an end:

* from a file descriptor where the scheduler offers one (``capabilities.end_fd``: readable
  means "describe it now"), else
* by asking the scheduler's ``describe`` at an interval that grows by half from
  ``first_poll`` to ``max_poll``.

The unknown-vs-terminal rule lives here: a status call that raises (a timeout, a scheduler
briefly unreachable) is never an end; the app is :class:`Unknown` and asked again, at gaps
that grow with how long it has not answered (up to ``max_unknown_poll``). A scheduler that
answers it does not know the app ends it (``Ended`` with ``desc=None``) only once it said so
for ``unknown_grace`` seconds.
"""

from __future__ import annotations

import logging
import os
import select
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from torchx.runner.api import Runner
from torchx.schedulers.api import DescribeAppResponse
from torchx.specs.runopts import CfgVal
from torchx.specs.status import AppState, is_terminal

K = TypeVar("K", bound=Hashable)
logger: logging.Logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ended(Generic[K]):
    """The app reached a final state (``desc``), or its scheduler no longer knows it (``desc`` None)."""

    key: K
    handle: str
    desc: DescribeAppResponse | None


@dataclass(frozen=True)
class Unknown(Generic[K]):
    """The scheduler stopped answering about the app, or stopped knowing it (``why``); it is asked
    again. ``error`` is what the status call raised (None: the scheduler answered it does not know
    the app)."""

    key: K
    handle: str
    why: str
    error: Exception | None = None


@dataclass(frozen=True)
class Answered(Generic[K]):
    """The scheduler answers about the app again (after :class:`Unknown`)."""

    key: K
    handle: str
    state: AppState


@dataclass(frozen=True)
class Overdue(Generic[K]):
    """The app's deadline passed before it was seen RUNNING (it is still watched)."""

    key: K
    handle: str


Event = Ended[K] | Unknown[K] | Answered[K] | Overdue[K]


@dataclass
class _Watch:
    handle: str
    fd: int | None
    deadline: float | None  # monotonic; None once the app was seen RUNNING
    interval: float
    next_poll: float
    unknown_since: float | None = None


class AppWatcher(Generic[K]):
    """Watches apps through a runner's schedulers until they end (see the module docstring).

    Args:
        first_poll: first gap (s) between status polls of an app without an end descriptor
        max_poll: longest such gap
        unknown_grace: seconds the scheduler may not know an app before it counts as ended
        max_unknown_poll: longest gap between polls while the scheduler does not answer
    """

    def __init__(
        self,
        runner: Runner,
        first_poll: float,
        max_poll: float,
        unknown_grace: float = 30.0,
        max_unknown_poll: float = 15.0,
    ) -> None:
        self.runner = runner
        self.first_poll, self.max_poll = first_poll, max_poll
        self.unknown_grace, self.max_unknown_poll = unknown_grace, max_unknown_poll
        self._watches: dict[K, _Watch] = {}

    def __len__(self) -> int:
        return len(self._watches)

    def handles(self) -> list[str]:
        """The handles watched."""
        return [w.handle for w in self._watches.values()]

    def add(self, key: K, handle: str, deadline: float | None = None) -> str | None:
        """Watches ``handle`` under ``key``; ``deadline`` (``time.monotonic()``): when to report
        :class:`Overdue` unless seen RUNNING. Returns why no end descriptor could be had, if the
        scheduler offers them and it failed (the app is polled then)."""
        fd, problem = None, None
        try:
            scheduler, app_id = self.runner.resolve(handle)
            if scheduler.capabilities.end_fd:
                fd = scheduler.end_fd(app_id)
        except Exception as e:  # a bad handle or scheduler: its status call says so, as an unknown app
            problem = str(e)
        now = time.monotonic()
        # without a descriptor, or with a deadline to keep: asked at once (it may have ended already)
        first = now if fd is None or deadline is not None else float("inf")
        self._watches[key] = _Watch(handle, fd, deadline, self.first_poll, first)
        return problem

    def remove(self, key: K) -> None:
        """Stops watching ``key`` (no-op if not watched)."""
        watch = self._watches.pop(key, None)
        if watch is not None and watch.fd is not None:
            os.close(watch.fd)

    def close(self) -> None:
        """Stops watching everything."""
        for key in list(self._watches):
            self.remove(key)

    def wait(self, wake: int | None = None) -> tuple[list[Event[K]], bool]:
        """Blocks until an app may have ended, a poll is due or ``wake`` is readable (drained
        here); returns what happened (an :class:`Ended` app is no longer watched) and whether
        ``wake`` woke it."""
        fds = {w.fd: key for key, w in self._watches.items() if w.fd is not None}
        due = min((w.next_poll for w in self._watches.values()), default=float("inf"))
        timeout = None if due == float("inf") else max(0.0, due - time.monotonic())
        waited = [wake] if wake is not None else []
        ready, _, _ = select.select(waited + list(fds), [], [], timeout)
        woken = wake is not None and wake in ready
        if wake is not None and woken:
            drain(wake)
        events: list[Event[K]] = []
        for fd in ready:
            if fd in fds:
                os.close(fd)
                self._watches[fds[fd]].fd = None
                self._check(fds[fd], events)
        now = time.monotonic()
        for key in [k for k, w in self._watches.items() if w.next_poll <= now]:
            self._check(key, events)
        return events, woken

    def _check(self, key: K, events: list[Event[K]]) -> None:
        w = self._watches[key]
        raised = None
        try:
            scheduler, app_id = self.runner.resolve(w.handle)
            desc = scheduler.describe(app_id)
        except Exception as e:
            desc, raised = None, e
        now = time.monotonic()
        if desc is None:
            if w.unknown_since is None:
                w.unknown_since = now
                why = "its scheduler does not know it" if raised is None else f"cannot get its status: {raised}"
                events.append(Unknown(key, w.handle, why, raised))
            if raised is None and now - w.unknown_since >= self.unknown_grace:
                self.remove(key)
                events.append(Ended(key, w.handle, None))
                return
            # back off while the scheduler does not answer
            w.next_poll = now + min(self.max_unknown_poll, max(w.interval, (now - w.unknown_since) / 2))
            return
        if is_terminal(desc.state):
            self.remove(key)
            events.append(Ended(key, w.handle, desc))
            return
        if w.unknown_since is not None:
            w.unknown_since = None
            events.append(Answered(key, w.handle, desc.state))
        if desc.state == AppState.RUNNING:
            w.deadline = None
        elif w.deadline is not None and now >= w.deadline:
            events.append(Overdue(key, w.handle))
        if w.fd is not None and w.deadline is None:
            w.next_poll = float("inf")  # its end wakes us
        else:
            w.next_poll = now + w.interval
            if w.deadline is not None:
                w.next_poll = min(w.next_poll, w.deadline)
            w.interval = min(self.max_poll, w.interval * 1.5)


def listed_names(runner: Runner, scheduler: str, cfg: Mapping[str, CfgVal] | None = None) -> dict[str, str]:
    """The handles of the apps ``scheduler`` lists, by app name: how a driver finds a submission
    that was in flight when it stopped. Empty (logged) if the scheduler cannot list."""
    try:
        return {a.name: a.app_handle for a in runner.list(scheduler, cfg) if a.name}
    except Exception as e:  # what was in flight is submitted again
        logger.warning("cannot list %s apps to find submissions in flight: %s", scheduler, e)
        return {}


def drain(fd: int) -> None:
    """Reads everything a non-blocking descriptor holds (a wake-up pipe)."""
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass
