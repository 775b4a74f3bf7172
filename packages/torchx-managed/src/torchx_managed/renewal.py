"""The renewal rules every lease of torchx-managed follows, whatever keeps its record (a
Kubernetes Lease, :mod:`torchx_managed.lease`; an object in a bucket,
:mod:`torchx_managed.journal_store`). They are client-go's leader election:

* a holder renews its record every ``renew_every`` seconds with a write conditional on the
  version it read (``resourceVersion``, an ETag), so two writers cannot both win;
* a contender takes a record only once it has stayed unchanged for the lease's duration, timed
  by the contender's own clock (no clocks are compared), or at once when it names no holder
  (a holder that stopped cleanly gives it back);
* a holder that could not renew for ``renew_deadline`` seconds (shorter than the duration), or
  that reads another holder, has lost it and must stop before a contender may take it.

A subclass says how its record is read and written (:meth:`RenewedLease._read`,
:meth:`~RenewedLease._create`, :meth:`~RenewedLease._replace`, :meth:`~RenewedLease._give_back`).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable

logger: logging.Logger = logging.getLogger("torchx_managed.renewal")


class RenewedLease:
    """One process's hold on one lease record (see the module docstring).

    Args:
        where: the record, as logs name it
        identity: who holds it (unique per holder)
        duration: seconds a record unrenewed stays its holder's
        renew_every: seconds between two renewals by the holder
        renew_deadline: seconds without a renewal after which the holder has lost it
    """

    def __init__(self, where: str, identity: str, duration: float, renew_every: float, renew_deadline: float) -> None:
        self.where, self.identity = where, identity
        self.duration, self.renew_every, self.renew_deadline = duration, renew_every, renew_deadline
        self.holder = ""  # the holder last read
        self._observed: tuple[str, float] | None = None  # (version, when first read unchanged)
        self._renewed: float | None = None  # monotonic time of this holder's last take or renewal
        self._stop = threading.Event()
        self._on_lost: Callable[[], None] | None = None
        self._tick: Callable[[], None] | None = None
        self._renewals = 0
        self._due = 0.0  # monotonic time of the next renewal (kept by the keeper)
        self._renewing = threading.Event()  # set while a keeper thread renews it

    # ------------------------------------------------------------------ what a subclass says
    def _read(self) -> tuple[str, str, float] | None:
        """``(version, holder, duration)`` of the record (holder ``""``: nobody), None if there is none."""
        raise NotImplementedError

    def _create(self) -> bool:
        """Writes a record naming this holder where there is none; False if another was first."""
        raise NotImplementedError

    def _replace(self, version: str) -> bool:
        """Writes a record naming this holder over ``version``; False if it changed meanwhile."""
        raise NotImplementedError

    def _give_back(self) -> None:
        """Writes a record naming no holder over this holder's own (if it is still that)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the rules
    def try_acquire(self) -> bool:
        """Takes or renews the lease once; True if this holder holds it now.

        Raises:
            Exception: the record could not be read or written (not a lost race)
        """
        current = self._read()
        if current is None:
            return self._took(self._create())
        version, self.holder, duration = current
        now = time.monotonic()
        if self._observed is None or self._observed[0] != version:
            self._observed = (version, now)
        if self.holder not in ("", self.identity) and now - self._observed[1] < duration:
            return False
        return self._took(self._replace(version))

    def _took(self, won: bool) -> bool:
        if not won:
            return False
        if self.holder != self.identity:
            logger.info("took lease %s", self.where)
        self.holder, self._renewed = self.identity, time.monotonic()
        return True

    def valid(self) -> bool:
        """True while this holder's last take or renewal is younger than ``renew_deadline``."""
        return self._renewed is not None and time.monotonic() - self._renewed < self.renew_deadline

    def acquire(self, stop: threading.Event | None = None) -> bool:
        """Waits until this holder holds the lease (True).

        With ``stop``: waits however long another holds it, until ``stop`` is set (False); an
        error reading or writing the record is logged and tried again. Without: waits only while
        the record stays unchanged (a holder that died) and returns False as soon as it is seen
        renewed (a live holder); an error is raised.
        """
        first: str | None = None
        while stop is None or not stop.is_set():
            try:
                if self.try_acquire():
                    return True
            except Exception as e:
                if stop is None:
                    raise
                logger.warning("cannot take lease %s yet: %s", self.where, e)
            observed = self._observed[0] if self._observed is not None else None
            if first is None:
                first = observed or ""
                logger.info("lease %s is held by %s: waiting for it", self.where, self.holder or "?")
            elif stop is None and observed != first:
                return False
            if stop is None:
                time.sleep(self.renew_every / 2)
            else:
                stop.wait(1.0)
        return False

    def keep(self, on_lost: Callable[[], None], tick: Callable[[], None] | None = None) -> None:
        """Renews the lease every ``renew_every`` seconds until :meth:`release` (on the process's
        :class:`Keeper`), calling ``tick`` after every second renewal; calls ``on_lost`` once
        (from a keeper thread) when the lease is lost: another holder read, or no renewal for
        ``renew_deadline`` (this process frozen, the store away)."""
        self._on_lost, self._tick, self._renewals = on_lost, tick, 0
        self._due = time.monotonic() + self.renew_every
        _keep(self)

    def _renew_once(self) -> bool:
        """One renewal (on a keeper thread); False once the lease is lost or released."""
        if self._stop.is_set():  # released while this renewal waited its turn
            return False
        # past the deadline: lost, whatever the record says now, before anything else runs on
        if self.valid():
            try:
                if self.try_acquire():
                    self._renewals += 1
                    if self._tick is not None and self._renewals % 2 == 0:
                        self._tick()
                    return not self._stop.is_set()
            except Exception as e:
                logger.warning("cannot renew lease %s: %s", self.where, e)
        if self._stop.is_set():
            return False
        if self.holder not in ("", self.identity) or not self.valid():
            logger.error("lost lease %s (holder now %r): stopping", self.where, self.holder or None)
            self._renewed = None
            if self._on_lost is not None:
                self._on_lost()
            return False
        return True

    def release(self) -> None:
        """Stops renewing and, if still held, gives the lease back (a contender takes it at once)."""
        self._stop.set()
        if not _let_go(self, timeout=10):
            logger.warning("a renewal of lease %s is still under way: not giving it back", self.where)
            return
        if self._renewed is None:
            return
        self._renewed = None
        try:
            self._give_back()
        except Exception as e:  # it expires by itself
            logger.warning("cannot give lease %s back: %s", self.where, e)


class Keeper:
    """Renews every kept lease of the process: one thread schedules (every 0.1 s) and up to
    :data:`KEEPER_THREADS` threads renew, each lease on one of them at a time, so a request
    that hangs delays only that lease (which loses itself at its deadline, as before) and a
    controller of 100 jobs runs a few renewing threads, not 100 (each with its own stack and
    allocator arena). Its threads end once it keeps no lease (a process that let go of its
    leases runs no thread of them, as before: local_cwd forks its supervisors only from a
    launcher without other threads); the next lease kept starts a new keeper."""

    def __init__(self) -> None:
        self._leases: list[RenewedLease] = []
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[RenewedLease | None] = queue.SimpleQueue()
        self._idle = threading.Event()  # set once it keeps no lease: its threads end
        # daemon threads, as each lease's own thread was: a renewal hanging on the network never
        # holds up the process's exit
        self._threads = [threading.Thread(target=self._schedule, name="lease-keeper", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"lease-{i}", daemon=True) for i in range(KEEPER_THREADS)
        ]
        for thread in self._threads:
            thread.start()

    def add(self, lease: RenewedLease) -> bool:
        """Keeps ``lease``; False if this keeper has ended (make another)."""
        with self._lock:
            if self._idle.is_set():
                return False
            self._leases.append(lease)
            return True

    def remove(self, lease: RenewedLease, timeout: float) -> bool:
        """Stops keeping ``lease``; False if its renewal under way did not end within ``timeout``
        seconds (True at once when called from that renewal itself). The last lease removed ends
        the keeper's threads (waited for, unless called from one of them)."""
        with self._lock:
            if lease in self._leases:
                self._leases.remove(lease)
            if not self._leases:
                self._idle.set()
        if getattr(_renewing, "lease", None) is lease:
            return True
        deadline = time.monotonic() + timeout
        while lease._renewing.is_set():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        if self._idle.is_set() and threading.current_thread() not in self._threads:
            for thread in self._threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return True

    def _schedule(self) -> None:
        while not self._idle.wait(0.1):
            now = time.monotonic()
            with self._lock:
                due = [x for x in self._leases if x._due <= now and not x._renewing.is_set()]
                for lease in due:
                    lease._renewing.set()
            for lease in due:
                self._queue.put(lease)
        for _ in range(KEEPER_THREADS):
            self._queue.put(None)  # each renewing thread ends after what it was given

    def _work(self) -> None:
        while (lease := self._queue.get()) is not None:
            self._renew(lease)

    def _renew(self, lease: RenewedLease) -> None:
        _renewing.lease = lease
        try:
            keep = lease._renew_once()
        except Exception:  # tick or on_lost failed: renewing goes on unless the lease was lost
            logger.exception("renewing lease %s", lease.where)
            keep = lease._renewed is not None
        finally:
            _renewing.lease = None
        with self._lock:
            lease._due = time.monotonic() + lease.renew_every
            if not keep and lease in self._leases:
                self._leases.remove(lease)
                if not self._leases:
                    self._idle.set()
            lease._renewing.clear()


#: how many renewals run at once at most (each lease is renewed on one of them at a time)
KEEPER_THREADS = 4
_renewing = threading.local()  # the lease a keeper thread renews now
_keeper_lock = threading.Lock()
_keepers: list[Keeper] = []  # the current keeper, if any


def _forget_keeper() -> None:  # a forked child has none of the keeper's threads
    global _keeper_lock
    _keeper_lock = threading.Lock()
    _keepers.clear()


os.register_at_fork(after_in_child=_forget_keeper)


def _keep(lease: RenewedLease) -> None:
    """Hands ``lease`` to the current keeper, or to a new one if there is none (or it ended)."""
    with _keeper_lock:
        if not _keepers or not _keepers[0].add(lease):
            _keepers[:] = [Keeper()]
            _keepers[0].add(lease)


def _let_go(lease: RenewedLease, timeout: float) -> bool:
    """:meth:`Keeper.remove` on the current keeper (True if none keeps anything)."""
    with _keeper_lock:
        keeper = _keepers[0] if _keepers else None
    return keeper.remove(lease, timeout) if keeper is not None else True
