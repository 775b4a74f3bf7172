"""Reads a replica's output file, optionally following it while the job runs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

#: seconds between reads when following a file that has no new data
POLL_INTERVAL = 0.2


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
