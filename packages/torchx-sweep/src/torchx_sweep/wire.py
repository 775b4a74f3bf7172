"""What the sweep driver and its submitter processes say to each other (see
:meth:`torchx_sweep.driver.Driver._coordinate`), and reading a wake-up pipe empty.

A submitter asks ``n K\\n`` (up to K trials) or says ``f\\n`` (a trial failed under
``--fail-fast``); the driver answers each ``n`` with one :func:`frame`.
"""

from __future__ import annotations

import pickle
import socket
from typing import Any

from torchx.specs.dryrun import AppDryRunInfo


def frame(items: list[tuple[int, AppDryRunInfo[Any] | None]]) -> bytes:
    """A reply to a submitter: trials to submit, each with its dry run when there is one (pickled:
    the two ends are forks of one process, nothing else reads this socket)."""
    try:
        data = pickle.dumps(items)
    except Exception:  # a request that cannot be pickled: the submitter dry-runs it again
        data = pickle.dumps([(index, None) for index, _ in items])
    return len(data).to_bytes(4, "big") + data


def read_frame(stream: socket.SocketIO) -> list[tuple[int, AppDryRunInfo[Any] | None]]:
    """Reads one :func:`frame`.

    Raises:
        EOFError: the coordinator closed the socket
    """

    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = stream.read(n - len(buf))
            if not chunk:
                raise EOFError("the coordinator is gone")
            buf += chunk
        return buf

    items: list[tuple[int, AppDryRunInfo[Any] | None]] = pickle.loads(exactly(int.from_bytes(exactly(4), "big")))
    return items
