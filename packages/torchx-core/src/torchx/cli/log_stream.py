"""Prints the logs of an app's replicas, one thread per replica, each line prefixed ``role/replica``."""

from __future__ import annotations

import sys
import threading

from torchx.cli.output import color_prefix, use_color

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import IO

    from torchx.cli.progress import StatusLine
    from torchx.runner.api import Runner
    from torchx.schedulers.streams import Stream


def replicas_of(
    runner: Runner, app_handle: str, role_filter: str | None = None, replica_ids: list[int] | None = None
) -> list[tuple[str, int]]:
    """(role, replica id) pairs of an app, limited to ``role_filter`` and ``replica_ids``.

    Raises:
        ValueError: the role does not exist in the app
    """
    from torchx.specs.handles import UnknownAppException

    app = runner.describe(app_handle)
    if app is None:
        raise UnknownAppException(app_handle)
    roles = {r.name: r.num_replicas for r in app.roles}
    if not roles:  # the scheduler reports replica states only (as many written for upstream TorchX do)
        status = runner.status(app_handle)
        roles = {r.role: len(r.replicas) for r in (status.roles if status is not None else [])}
    if role_filter is not None and role_filter not in roles:
        raise ValueError(f"app {app_handle} has no role {role_filter!r}; its roles: {', '.join(roles)}")
    pairs = []
    for role, count in roles.items():
        if role_filter is not None and role != role_filter:
            continue
        for k in range(count):
            if replica_ids is None or k in replica_ids:
                pairs.append((role, k))
    return pairs


def stream_logs(
    runner: Runner,
    app_handle: str,
    replicas: list[tuple[str, int]],
    should_tail: bool,
    regex: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    streams: Stream | None = None,
    out: IO[str] = sys.stdout,
    status_line: StatusLine | None = None,
    on_closed: Callable[[], None] | None = None,
) -> tuple[list[threading.Thread], list[str]]:
    """Starts one thread per replica printing its lines to ``out``.

    Returns the threads and a list that collects one message per replica that failed.

    Lines are written whole (a lock serialises replicas), above ``status_line`` when given.
    When the reader of ``out`` goes away (``torchx ... | head -1``) the threads stop quietly
    and ``on_closed`` is called once, in one of them.
    """
    lock = threading.Lock()
    color = use_color(out)
    show_prefix = len(replicas) > 0
    errors: list[str] = []
    closed: list[bool] = []
    unterminated: list[bool] = []  # the last line written had no newline (a job's last line)
    reconfigure = getattr(out, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="surrogateescape")  # bytes a job wrote that are not UTF-8 go out as they came

    def pump(index: int, role: str, k: int) -> None:
        prefix = color_prefix(f"{role}/{k}", index, color) + " " if show_prefix else ""
        try:
            for line in runner.log_lines(app_handle, role, k, regex, since, until, should_tail, streams):
                with lock:
                    if closed:
                        return
                    if status_line is not None:
                        status_line.print_above(prefix + line + ("" if line.endswith("\n") else "\n"), out)
                        continue
                    # a line without newline stays so, unless another line follows it
                    text = ("\n" if unterminated else "") + prefix + line
                    unterminated[:] = [] if line.endswith("\n") else [True]
                    out.write(text)
                    out.flush()
        except BrokenPipeError:
            with lock:
                first = not closed
                closed.append(True)
            if first and on_closed is not None:
                on_closed()
        except Exception as e:  # reported, the other replicas carry on (an error without a message by its type)
            with lock:
                errors.append(f"logs of {role}/{k}: {str(e) or type(e).__name__}")

    threads = [
        threading.Thread(target=pump, args=(i, role, k), daemon=True, name=f"log-{role}-{k}")
        for i, (role, k) in enumerate(replicas)
    ]
    for t in threads:
        t.start()
    return threads, errors
