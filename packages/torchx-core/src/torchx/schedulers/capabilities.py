"""What a scheduler can do, declared so callers refuse unsupported requests up front."""

from __future__ import annotations

from torchx.specs.roles import RetryPolicy


class SchedulerCapabilities:
    """The features a scheduler supports.

    Attributes:
        log_tail: ``log_iter(should_tail=True)`` follows a running replica's output
        log_since_until: ``log_iter`` filters by ``since``/``until``
        log_streams: the streams ``log_iter`` can return (``stdout``, ``stderr``, ``combined``)
        logs: logs can be read at all
        list: ``list`` is supported
        cancel: ``cancel`` is supported
        delete: ``delete`` purges what ``cancel`` keeps
        workspace: jobs can ship a workspace
        retry_policies: retry policies honoured when ``max_retries > 0`` (empty: no retries)
        elastic: ``min_replicas`` is honoured
        mounts: mount kinds supported (``bind``, ``volume``, ``device``)
        attach: ``torchx run`` follows the job's output and waits by default (local schedulers)
        job_arrays: ``submit_array_dryrun`` / ``array_element_id`` run many apps of one shape as
            one native job array (``sbatch --array``, Batch array jobs); see :class:`Scheduler`
    """

    __slots__ = (
        "attach",
        "cancel",
        "delete",
        "elastic",
        "job_arrays",
        "list",
        "log_since_until",
        "log_streams",
        "log_tail",
        "logs",
        "mounts",
        "retry_policies",
        "workspace",
    )

    log_tail: bool
    log_since_until: bool
    log_streams: frozenset[str]
    logs: bool
    list: bool
    cancel: bool
    delete: bool
    workspace: bool
    retry_policies: frozenset[RetryPolicy]
    elastic: bool
    mounts: frozenset[str]
    attach: bool
    job_arrays: bool

    def __init__(
        self,
        log_tail: bool = True,
        log_since_until: bool = False,
        log_streams: frozenset[str] = frozenset({"combined"}),
        logs: bool = True,
        list: bool = True,
        cancel: bool = True,
        delete: bool = True,
        workspace: bool = False,
        retry_policies: frozenset[RetryPolicy] = frozenset({RetryPolicy.APPLICATION}),
        elastic: bool = False,
        mounts: frozenset[str] = frozenset(),
        attach: bool = False,
        job_arrays: bool = False,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "log_tail", log_tail)
        set_(self, "log_since_until", log_since_until)
        set_(self, "log_streams", frozenset(log_streams))
        set_(self, "logs", logs)
        set_(self, "list", list)
        set_(self, "cancel", cancel)
        set_(self, "delete", delete)
        set_(self, "workspace", workspace)
        set_(self, "retry_policies", frozenset(retry_policies))
        set_(self, "elastic", elastic)
        set_(self, "mounts", frozenset(mounts))
        set_(self, "attach", attach)
        set_(self, "job_arrays", job_arrays)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SchedulerCapabilities is immutable (cannot set {name!r})")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchedulerCapabilities) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "SchedulerCapabilities(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


class UnsupportedFeatureError(Exception):
    """The scheduler cannot do what was asked (e.g. filter logs by time)."""
