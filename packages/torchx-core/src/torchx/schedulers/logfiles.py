"""Reading a replica's output file, optionally following it while the job runs.

For schedulers whose jobs write their output to files torchx can read (Slurm, LSF, ...):
:func:`read_lines` reads or follows one file, :func:`ended_checker` tells it when to stop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator

from torchx.schedulers.streams import Stream, filter_regex
from torchx.specs.status import AppState, is_terminal

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
    while not os.path.exists(path):
        if not should_tail or ended():
            return
        time.sleep(poll)
    with open(path, "rb") as f:
        pending = b""
        done = False
        while True:
            chunk = f.read(1 << 16)
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace") + "\n"
                continue
            if not should_tail or done:
                break
            done = ended()  # one more read after the end: what was written last
            if not done:
                time.sleep(poll)
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


def replica_log(
    path: str,
    state: AppState,
    should_tail: bool,
    current_state: Callable[[], AppState | None],
    regex: str | None = None,
    missing_ok: bool = False,
) -> Iterable[str]:
    """The lines of a replica's output file for ``log_iter``: read, or followed until the job ends.

    Args:
        path: the file
        state: the job's state now
        should_tail: follow the file (waiting for it to appear) until the job ends
        current_state: asks the scheduler for the job's state (see :func:`ended_checker`)
        regex: only lines it matches
        missing_ok: a missing file means no output yet (the replica has not started)

    Raises:
        FileNotFoundError: the file is missing, not ``missing_ok`` and not following
    """
    if not should_tail and not missing_ok and not os.path.exists(path):
        raise FileNotFoundError(
            f"log file {path} does not exist: the job's directory must be visible from this host (a shared filesystem)"
        )
    lines = read_lines(path, should_tail, ended_checker(current_state, state))
    return filter_regex(regex, lines) if regex else lines
