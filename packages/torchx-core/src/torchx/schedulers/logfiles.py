"""Reading a replica's output file, optionally following it while the job runs.

For schedulers whose jobs write their output to files torchx can read (Slurm, LSF, ...):
:class:`FileLogsScheduler` gives them ``log_iter``; :func:`read_lines` reads or follows one
file, :func:`ended_checker` tells it when to stop.
"""

from __future__ import annotations

import abc
import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from torchx.schedulers.api import Scheduler
from torchx.schedulers.streams import Stream, filter_regex, follow
from torchx.specs.status import AppState, is_terminal

T = TypeVar("T")  # run config
A = TypeVar("A")  # app
D = TypeVar("D")  # dryrun request

#: seconds between reads when following a file that has no new data
POLL_INTERVAL = 0.2
#: seconds between job-state checks while following a file
STATE_INTERVAL = 1.0
#: the file suffix of each stream where a replica's output is kept in ``<base>.out|.err|.log``
#: (``log``: stdout and stderr together, as they came; what ``torchx log`` shows by default)
STREAM_SUFFIXES = {Stream.STDOUT: "out", Stream.STDERR: "err", Stream.COMBINED: "log"}


def read_lines(path: str, should_tail: bool, ended: Callable[[], bool], poll: float = POLL_INTERVAL) -> Iterator[str]:
    """Lines of ``path`` (each with its ``\\n``; the last may lack one).

    With ``should_tail`` it waits for the file to appear and follows it until ``ended()``
    says the job is over, then yields what was written last. Bytes that are not UTF-8 are
    replaced, never dropped.
    """
    if not should_tail and not os.path.exists(path):
        return
    opened: list[Any] = []
    pending = b""

    def read() -> list[str]:
        nonlocal pending
        if not opened:
            try:
                opened.append(open(path, "rb"))  # noqa: SIM115 (closed below)
            except FileNotFoundError:
                return []
        chunk = opened[0].read(1 << 16)
        if not chunk:
            return []
        *lines, pending = (pending + chunk).split(b"\n")
        return [line.decode("utf-8", errors="replace") + "\n" for line in lines]

    try:
        yield from follow(read, should_tail, ended, lambda: time.sleep(poll))
    finally:
        for f in opened:
            f.close()
    if pending:
        yield pending.decode("utf-8", errors="replace")


def ended_checker(
    current_state: Callable[[], AppState | None], state: AppState, interval: float = STATE_INTERVAL
) -> Callable[[], bool]:
    """A callable telling if a job ended, calling ``current_state`` at most once per ``interval``.

    Args:
        current_state: the job's state now (None: the scheduler no longer knows it, so it ended)
        state: the state last seen
        interval: seconds between two calls of ``current_state``
    """
    last_at = time.monotonic()
    ended = is_terminal(state)

    def check() -> bool:
        nonlocal last_at, ended
        if not ended and time.monotonic() - last_at >= interval:
            now = current_state()
            last_at = time.monotonic()
            ended = now is None or is_terminal(now)
        return ended

    return check


def warn_no_time_filter(backend: str) -> None:
    """Says that ``since``/``until`` are ignored on ``backend`` (its logs have no timestamps)."""
    import logging

    logging.getLogger(__name__).warning(
        "the %s scheduler cannot filter logs by time (its log files have no timestamps): since/until are ignored,"
        " every line is shown",
        backend,
    )


class FileLogsScheduler(Scheduler[T, A, D]):
    """A scheduler whose replicas write their output to files in the job's directory that this
    host can read (a shared filesystem): ``<workdir>/<log_file(app_id, role, k, suffix)>`` with
    the suffixes of :data:`STREAM_SUFFIXES`. ``describe`` puts the directory in
    ``metadata["workdir"]``. Gives ``log_iter``: all output by default, one stream on request,
    regex, tail (until the job ends); no ``since``/``until`` (the files have no timestamps).
    """

    #: job states in which a missing file means "no output yet" (else it is an error)
    no_output_states: ClassVar[frozenset[AppState]] = frozenset({AppState.PENDING, AppState.SUBMITTED})

    @abc.abstractmethod
    def log_file(self, app_id: str, role: str, replica_id: int, suffix: str) -> str:
        """A replica's file for ``suffix`` (out, err, log), relative to the job's directory."""

    def app_state(self, app_id: str) -> AppState | None:
        """The job's state now (None: unknown)."""
        desc = self.describe(app_id)
        return desc.state if desc else None

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines of the replica's file: all output (stdout and stderr as they came) by default,
        or the one stream asked for.

        ``since``/``until`` are ignored, as TorchX does (the files have no timestamps), with a
        warning.

        Raises:
            ValueError: the app or the replica is unknown
            FileNotFoundError: the replica wrote output but its file is not visible from this host
        """
        if since is not None or until is not None:
            warn_no_time_filter(self.backend)
        stream = Stream(streams) if streams is not None else Stream.COMBINED
        desc = self.describe(app_id)
        if desc is None:
            raise ValueError(f"{self.backend} job {app_id} is unknown")
        if not any(r.role == role_name and r.id == k for rs in desc.roles_statuses for r in rs.replicas):
            raise ValueError(f"{self.backend} job {app_id} has no replica {role_name}/{k}")
        path = os.path.join(
            str(desc.metadata.get("workdir") or ""), self.log_file(app_id, role_name, k, STREAM_SUFFIXES[stream])
        )
        if not should_tail and desc.state not in self.no_output_states and not os.path.exists(path):
            raise FileNotFoundError(
                f"log file {path} of {self.backend} job {app_id} does not exist: the job's directory must be"
                " visible from this host (a shared filesystem)"
            )
        lines = read_lines(path, should_tail, ended_checker(lambda: self.app_state(app_id), desc.state))
        return filter_regex(regex, lines) if regex else lines
