"""Fencing through the API server: a coordination.k8s.io/v1 Lease that one controller holds at a
time (``controller=kubernetes``).

A file lock on the journal fences controllers only where every controller's file system gives
locks that see each other (one node, or NFS with working locks); a Lease lives in the API server
every pod reaches, whichever node runs it. The rules are client-go's leader election
(:mod:`torchx_managed.renewal`, shared with a URL journal's leases): the holder renews every
``leaseDurationSeconds / 7`` with an update that names the ``resourceVersion`` it read, and has
lost it after ``2/3`` of the duration without a renewal.

Reached through ``torchx_sched_k8s``'s :class:`~torchx_sched_k8s.kubeapi.KubeApi`, imported only
where a Lease is written (torchx-managed imports without torchx-sched-k8s).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from torchx_managed.renewal import RenewedLease

if TYPE_CHECKING:
    from torchx_sched_k8s.kubeapi import KubeApi

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


class Lease(RenewedLease):
    """One process's hold on the Lease ``namespace/name`` (rules: :mod:`torchx_managed.renewal`).

    Args:
        api: the API server
        namespace: the Lease's namespace
        name: the Lease's name
        identity: who holds it (unique per process: a pod's name and a pid)
        duration: ``leaseDurationSeconds`` written when taking it
    """

    def __init__(self, api: KubeApi, namespace: str, name: str, identity: str, duration: float = LEASE_DURATION):
        super().__init__(f"{namespace}/{name}", identity, duration, duration / 7, duration * 2 / 3)
        self.api, self.namespace, self.name = api, namespace, name
        self._spec: dict[str, Any] = {}  # the spec last read

    def _read(self) -> tuple[str, str, float] | None:
        current = self.api.get_lease(self.namespace, self.name)
        if current is None:
            return None
        self._spec = current.get("spec") or {}
        version = str(current["metadata"].get("resourceVersion", ""))
        holder = str(self._spec.get("holderIdentity") or "")
        return version, holder, float(self._spec.get("leaseDurationSeconds") or self.duration)

    def _write(self, version: str | None) -> bool:
        from torchx_sched_k8s.errors import KubernetesError  # here: managed imports without k8s

        try:
            if version is None:
                self.api.create(self._record(None, {}))
            else:
                self.api.replace_lease(self.namespace, self.name, self._record(version, self._spec))
        except KubernetesError as e:
            if e.status == 409:  # another one made or wrote it since it was read
                return False
            raise
        return True

    def _create(self) -> bool:
        return self._write(None)

    def _replace(self, version: str) -> bool:
        return self._write(version)

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

    def _give_back(self) -> None:
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
