"""Reading (and following) one CloudWatch Logs stream."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from torchx.schedulers.streams import follow

from torchx_sched_aws._aws import aws_errors, client_error_code


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _call(fn: Callable[..., Any], what: str, **kwargs: Any) -> Any:
    """``fn(**kwargs)``; None if the log group or stream does not exist (yet)."""
    try:
        return fn(**kwargs)
    except Exception as e:
        if client_error_code(e) == "ResourceNotFoundException":
            return None
        with aws_errors(what):
            raise


def find_stream(logs: Any, group: str, prefix: str) -> str | None:
    """The name of the first stream of ``group`` starting with ``prefix`` (None if there is none)."""
    resp = _call(
        logs.describe_log_streams,
        f"looking for log stream {group}/{prefix}*",
        logGroupName=group,
        logStreamNamePrefix=prefix,
    )
    streams = (resp or {}).get("logStreams") or []
    return str(streams[0]["logStreamName"]) if streams else None


def iter_lines(
    logs: Any,
    group: str,
    stream: str,
    since: datetime | None = None,
    until: datetime | None = None,
    should_tail: bool = False,
    finished: Callable[[], bool] = lambda: True,
    poll_interval: float = 1.0,
) -> Iterator[str]:
    """The messages of a stream as lines (each ending in ``\\n``), oldest first.

    Args:
        logs: a boto3 ``logs`` client
        group: the log group
        stream: the log stream
        since: only events at or after this time
        until: only events before this time
        should_tail: keep reading until ``finished()`` is true (then read what is left)
        finished: whether the writer has stopped (asked only when tailing)
        poll_interval: seconds between reads while tailing
    """
    base: dict[str, Any] = {"logGroupName": group, "logStreamName": stream, "startFromHead": True}
    if since is not None:
        base["startTime"] = _ms(since)
    until_ms = _ms(until) if until is not None else None
    if until_ms is not None:
        base["endTime"] = until_ms
    what = f"reading CloudWatch logs {group}/{stream}"
    token: str | None = None

    def read_to_end() -> list[str]:
        """The events after ``token``, to the current end of the stream."""
        nonlocal token
        lines = []
        while True:
            args = dict(base, nextToken=token) if token else base
            resp = _call(logs.get_log_events, what, **args) or {}
            for event in resp.get("events") or []:
                if until_ms is not None and event["timestamp"] >= until_ms:
                    continue
                message = str(event.get("message", ""))
                lines.append(message if message.endswith("\n") else message + "\n")
            new_token = resp.get("nextForwardToken")
            if not new_token or new_token == token:
                return lines
            token = new_token

    yield from follow(read_to_end, should_tail, finished, lambda: time.sleep(poll_interval))
