"""The process's lease keeper (:class:`torchx_managed.renewal.Keeper`): many leases renewed by a
few threads, each at its own pace; a renewal that hangs costs only its own lease (lost at its
deadline) while the others go on; a released lease is given back and renewed no more.

The records are kept in memory (a store whose replies the test controls); the same rules run
against the live bucket and API server in the managed live tests."""

from __future__ import annotations

import threading
import time

from torchx.testing import eventually
from torchx_managed.renewal import KEEPER_THREADS, RenewedLease

EVERY, DEADLINE, DURATION = 0.2, 0.8, 1.2


class _MemoryLease(RenewedLease):
    """A record in memory; ``hang`` makes each write wait that long, then time out."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"holder-of-{name}", DURATION, EVERY, DEADLINE)
        self.record = ("0", "")  # (version, holder)
        self.writes = 0
        self.hang = 0.0

    def _read(self) -> tuple[str, str, float] | None:
        return (*self.record, DURATION)

    def _write(self, holder: str, version: str | None) -> bool:
        if self.hang:
            time.sleep(self.hang)
            raise TimeoutError("the store did not answer")
        if version is not None and version != self.record[0]:
            return False
        self.record = (str(int(self.record[0]) + 1), holder)
        self.writes += 1
        return True

    def _create(self) -> bool:
        return self._write(self.identity, None)

    def _replace(self, version: str) -> bool:
        return self._write(self.identity, version)

    def _give_back(self) -> None:
        self._write("", None)


def test_fifty_leases_are_renewed_by_a_few_threads_each_at_its_pace() -> None:
    before = threading.active_count()
    leases = [_MemoryLease(f"l{i}") for i in range(50)]
    lost: list[str] = []
    for lease in leases:
        assert lease.acquire()
        lease.keep(lambda name=lease.where: lost.append(name))  # type: ignore[misc]
    try:
        time.sleep(10 * EVERY)
        assert threading.active_count() - before <= KEEPER_THREADS + 1
        assert all(3 <= lease.writes <= 12 for lease in leases), sorted(lease.writes for lease in leases)
        assert all(lease.valid() for lease in leases) and lost == []
    finally:
        for lease in leases:
            lease.release()
    assert all(lease.record[1] == "" for lease in leases)  # given back
    # and the keeper's threads ended with its last lease (local_cwd forks only from a launcher
    # without other threads); the next lease kept starts a new keeper
    assert [t.name for t in threading.enumerate() if t.name.startswith("lease")] == []
    again = _MemoryLease("again")
    assert again.acquire()
    again.keep(lambda: None)
    eventually(lambda: again.writes >= 3, timeout=10)
    again.release()
    assert [t.name for t in threading.enumerate() if t.name.startswith("lease")] == []
    writes = [lease.writes for lease in leases]
    time.sleep(3 * EVERY)
    assert [lease.writes for lease in leases] == writes  # and renewed no more


def test_a_hanging_renewal_loses_only_its_own_lease() -> None:
    healthy = [_MemoryLease(f"h{i}") for i in range(KEEPER_THREADS * 2)]
    stuck = _MemoryLease("stuck")
    lost: list[str] = []
    for lease in [*healthy, stuck]:
        assert lease.acquire()
        lease.keep(lambda name=lease.where: lost.append(name))  # type: ignore[misc]
    try:
        stuck.hang = 2 * DEADLINE  # its store stops answering in time
        eventually(lambda: lost == ["stuck"], timeout=10)
        assert not stuck.valid()
        counts = [lease.writes for lease in healthy]
        time.sleep(5 * EVERY)
        assert all(lease.writes > n for lease, n in zip(healthy, counts, strict=True))
        assert all(lease.valid() for lease in healthy)
    finally:
        for lease in healthy:
            lease.release()
        stuck.hang = 0.0
        stuck.release()
