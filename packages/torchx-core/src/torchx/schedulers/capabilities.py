"""What a scheduler can do, declared so callers refuse unsupported requests up front."""

from __future__ import annotations

from torchx.specs.roles import RetryPolicy
from torchx.util.record import record


@record(frozen=True)
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
        recovery: ``submit_recovery_dryrun`` / ``recovery_attempts`` run an app that recovers
            inside the backend (requeue, retries, an in-job restart loop); see
            :mod:`torchx.schedulers.recovery`
        end_fd: ``end_fd`` gives a file descriptor that becomes readable when an app ends, so
            a caller watching many apps (a sweep, a managed job's driver) waits on them with
            ``select`` instead of polling ``describe``; see :meth:`Scheduler.end_fd`
    """

    log_tail: bool = True
    log_since_until: bool = False
    log_streams: frozenset[str] = frozenset({"combined"})
    logs: bool = True
    list: bool = True
    cancel: bool = True
    delete: bool = True
    workspace: bool = False
    retry_policies: frozenset[RetryPolicy] = frozenset({RetryPolicy.APPLICATION})
    elastic: bool = False
    mounts: frozenset[str] = frozenset()
    attach: bool = False
    job_arrays: bool = False
    recovery: bool = False
    end_fd: bool = False

    def __post_init__(self) -> None:
        for name in ("log_streams", "retry_policies", "mounts"):  # any iterable given: kept as a frozenset
            object.__setattr__(self, name, frozenset(getattr(self, name)))


class UnsupportedFeatureError(Exception):
    """The scheduler cannot do what was asked (e.g. filter logs by time)."""
