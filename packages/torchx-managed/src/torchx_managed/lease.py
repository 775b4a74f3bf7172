"""Fencing through the API server: a coordination.k8s.io/v1 Lease that one controller holds at a
time (``controller=kubernetes``).

A file lock on the journal fences controllers only where every controller's file system gives
locks that see each other (one node, or NFS with working locks); a Lease lives in the API server
every pod reaches, whichever node runs it. The rules are client-go's leader election:

* a holder renews the Lease every :attr:`Lease.retry` seconds (an update that names the
  ``resourceVersion`` it read, so two writers cannot both win);
* a contender takes the Lease only once its record has stayed unchanged for the Lease's
  ``leaseDurationSeconds``, timed by the contender's own clock (no clocks are compared), or at
  once when it has no holder (a holder that stopped cleanly gives it back);
* a holder that could not renew for :attr:`Lease.renew_deadline` seconds (shorter than the
  duration), or that reads another holder, has lost it and must stop before a contender may
  take it.

Reached through ``torchx_sched_k8s``'s :class:`~torchx_sched_k8s.kubeapi.KubeApi`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from torchx_sched_k8s.errors import KubernetesError
from torchx_sched_k8s.kubeapi import KubeApi

logger: logging.Logger = logging.getLogger("torchx_managed.lease")

#: seconds a Lease unrenewed stays its holder's
LEASE_DURATION = 15.0


def _now() -> str:
    """The time as a Kubernetes MicroTime."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_object(namespace: str, name: str, duration: float = LEASE_DURATION) -> dict[str, Any]:
    """A Lease nobody holds (made with the controller's other objects; the controller itself may
    only read and update it)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"leaseDurationSeconds": int(duration)},
    }


class Lease:
    """One process's hold on the Lease ``namespace/name`` (see the module docstring).

    Args:
        api: the API server
        namespace: the Lease's namespace
        name: the Lease's name
        identity: who holds it (unique per process: a pod's name and a pid)
        duration: ``leaseDurationSeconds`` written when taking it
    """

    def __init__(self, api: KubeApi, namespace: str, name: str, identity: str, duration: float = LEASE_DURATION):
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.duration = duration
        self.renew_deadline = duration * 2 / 3
        self.retry = duration / 7
        self.holder = ""  # the holder last read
        self._observed: tuple[str, float] | None = None  # (resourceVersion, when first read unchanged)
        self._renewed: float | None = None  # when this process last took or renewed it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def try_acquire(self) -> bool:
        """Takes or renews the Lease once; True if this process holds it now.

        Raises:
            KubernetesError: the API server refused or did not answer (not a lost race)
        """
        current = self.api.get_lease(self.namespace, self.name)
        if current is None:
            try:
                self.api.create(self._record(None, {}))
            except KubernetesError as e:
                if e.status == 409:  # another one made it first
                    return False
                raise
            return self._took()
        spec = current.get("spec") or {}
        version = str(current["metadata"].get("resourceVersion", ""))
        self.holder = str(spec.get("holderIdentity") or "")
        now = time.monotonic()
        if self._observed is None or self._observed[0] != version:
            self._observed = (version, now)
        duration = float(spec.get("leaseDurationSeconds") or self.duration)
        if self.holder not in ("", self.identity) and now - self._observed[1] < duration:
            return False
        try:
            self.api.replace_lease(self.namespace, self.name, self._record(version, spec))
        except KubernetesError as e:
            if e.status == 409:  # written by another since it was read
                return False
            raise
        return self._took()

    def _took(self) -> bool:
        if self.holder != self.identity:
            logger.info("took Lease %s/%s", self.namespace, self.name)
        self.holder = self.identity
        self._renewed = time.monotonic()
        return True

    def _record(self, version: str | None, spec: dict[str, Any]) -> dict[str, Any]:
        obj = lease_object(self.namespace, self.name, self.duration)
        if version is not None:
            obj["metadata"]["resourceVersion"] = version
        renewing = spec.get("holderIdentity") == self.identity
        obj["spec"].update(
            holderIdentity=self.identity,
            acquireTime=spec.get("acquireTime") if renewing else _now(),
            renewTime=_now(),
            leaseTransitions=int(spec.get("leaseTransitions") or 0) + (0 if renewing else 1),
        )
        return obj

    def acquire(self, stop: threading.Event) -> bool:
        """Waits until this process holds the Lease (True) or ``stop`` is set (False)."""
        waited = False
        while not stop.is_set():
            try:
                if self.try_acquire():
                    return True
            except KubernetesError as e:
                logger.warning("cannot take Lease %s/%s yet: %s", self.namespace, self.name, e)
            if not waited:
                logger.info("Lease %s/%s is held by %s: waiting for it", self.namespace, self.name, self.holder)
                waited = True
            stop.wait(1.0)
        return False

    def keep(self, on_lost: Callable[[], None]) -> None:
        """Renews the Lease in a thread until :meth:`release`; calls ``on_lost`` once (from that
        thread) when it is lost: another holder read, or no renewal for :attr:`renew_deadline`."""

        def loop() -> None:
            while not self._stop.wait(self.retry):
                # past the deadline (this process was frozen, or the server away): lost, whatever
                # the Lease says now, before anything else of this process runs on
                if time.monotonic() - (self._renewed or 0.0) < self.renew_deadline:
                    try:
                        if self.try_acquire():
                            continue
                    except KubernetesError as e:
                        logger.warning("cannot renew Lease %s/%s: %s", self.namespace, self.name, e)
                if (
                    self.holder not in ("", self.identity)
                    or time.monotonic() - (self._renewed or 0.0) >= self.renew_deadline
                ):
                    logger.error(
                        "lost Lease %s/%s (holder now %r): stopping", self.namespace, self.name, self.holder or None
                    )
                    self._renewed = None
                    on_lost()
                    return

        self._thread = threading.Thread(target=loop, name="lease", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stops renewing and, if still held, gives the Lease back (a contender takes it at once)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if self._renewed is None:
            return
        self._renewed = None
        try:
            current = self.api.get_lease(self.namespace, self.name)
            spec = (current or {}).get("spec") or {}
            if current is None or spec.get("holderIdentity") != self.identity:
                return
            obj = lease_object(self.namespace, self.name, 1)
            obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            obj["spec"].update(
                renewTime=_now(), acquireTime=spec.get("acquireTime"), leaseTransitions=spec.get("leaseTransitions")
            )
            self.api.replace_lease(self.namespace, self.name, obj)
            logger.info("gave Lease %s/%s back", self.namespace, self.name)
        except KubernetesError as e:  # it expires by itself
            logger.warning("cannot give Lease %s/%s back: %s", self.namespace, self.name, e)
