"""How many replicas the local schedulers start for one app: more fail the dry run at once
(building a request for 10**9 replicas would not end)."""

from __future__ import annotations

from torchx.specs.roles import AppDef

#: most replicas a local scheduler starts for one app (each is a process or a container, with
#: its logs and pipes); more is refused before anything is built
MAX_REPLICAS = 10_000


def replica_limit(user_processes: bool = True) -> tuple[int, str]:
    """How many replicas this machine lets one app start, and why: the smallest of
    :data:`MAX_REPLICAS`, ``kernel.pid_max`` and, when replicas are processes of this user
    (``user_processes``), the process limit (``ulimit -u``)."""
    limits = [(MAX_REPLICAS, f"the local schedulers' maximum {MAX_REPLICAS}")]
    if user_processes:
        import resource

        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        if nproc != resource.RLIM_INFINITY:
            limits.append((nproc, f"the process limit `ulimit -u` {nproc}"))
    pid_max = _pid_max()
    if pid_max is not None:
        limits.append((pid_max, f"kernel.pid_max {pid_max}"))
    return min(limits)


_pid_max_read: list[int | None] = []


def _pid_max() -> int | None:
    """``kernel.pid_max`` (Linux; None where there is none), read once per process (9 syscalls of
    Python's ``open`` per dry run otherwise): only an administrator's ``sysctl`` changes it, and
    a launcher that outlives that change keeps the bound it read, a sanity cap either way."""
    if not _pid_max_read:
        try:
            with open("/proc/sys/kernel/pid_max", "rb") as f:
                _pid_max_read.append(int(f.read()))
        except (OSError, ValueError):
            _pid_max_read.append(None)
    return _pid_max_read[0]


def check_replica_count(app: AppDef, backend: str, user_processes: bool = True) -> None:
    """Refuses an app with more replicas than this machine can start (before anything is built);
    ``user_processes``: replicas are processes of this user (not containers started by a daemon).

    Raises:
        ValueError: a ``num_replicas`` is not a non-negative int, or their sum is over :func:`replica_limit`
    """
    total = 0
    for role in app.roles:
        n = role.num_replicas
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"role {role.name!r}: num_replicas must be a whole number >= 0, not {n!r}")
        total += n
    limit, why = replica_limit(user_processes)
    if total > limit:
        raise ValueError(
            f"app {app.name!r} asks for {total} replicas; {backend} starts at most {limit} on this machine"
            f" ({why}): lower num_replicas, or use a cluster scheduler"
        )
