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
        self._thread: threading.Thread | None = None

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
        """Renews the lease in a thread until :meth:`release`, calling ``tick`` after every second
        renewal; calls ``on_lost`` once (from that thread) when the lease is lost: another holder
        read, or no renewal for ``renew_deadline`` (this process frozen, the store away)."""

        def loop() -> None:
            renewals = 0
            while not self._stop.wait(self.renew_every):
                # past the deadline: lost, whatever the record says now, before anything else runs on
                if self.valid():
                    try:
                        if self.try_acquire():
                            renewals += 1
                            if tick is not None and renewals % 2 == 0:
                                tick()
                            continue
                    except Exception as e:
                        logger.warning("cannot renew lease %s: %s", self.where, e)
                if self._stop.is_set():
                    return
                if self.holder not in ("", self.identity) or not self.valid():
                    logger.error("lost lease %s (holder now %r): stopping", self.where, self.holder or None)
                    self._renewed = None
                    on_lost()
                    return

        self._thread = threading.Thread(target=loop, name="lease", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stops renewing and, if still held, gives the lease back (a contender takes it at once)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if self._renewed is None:
            return
        self._renewed = None
        try:
            self._give_back()
        except Exception as e:  # it expires by itself
            logger.warning("cannot give lease %s back: %s", self.where, e)
