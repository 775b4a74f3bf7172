"""Pod log bytes -> torchx log lines: decode, keep every newline, filter by time and regex."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone

from torchx.schedulers.streams import decode_chunks, lines_from_chunks

_FRACTION = re.compile(r"\.(\d+)")


def parse_timestamp(stamp: str) -> datetime | None:
    """An RFC 3339 timestamp as the kubelet writes it (nanoseconds, ``Z``), timezone-aware."""
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), stamp.strip(), count=1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def aware(moment: datetime) -> datetime:
    """``moment`` with a timezone (naive datetimes are local time)."""
    return moment if moment.tzinfo else moment.astimezone()


def strip_timestamps(
    lines: Iterable[str], since: datetime | None = None, until: datetime | None = None
) -> Iterator[str]:
    """Drops the ``<timestamp> `` prefix of each line, keeping lines in ``[since, until)``."""
    since = aware(since) if since else None
    until = aware(until) if until else None
    for line in lines:
        stamp, sep, rest = line.partition(" ")
        moment = parse_timestamp(stamp) if sep else None
        if moment is None:  # not a timestamped line: keep as it is
            yield line
            continue
        if since is not None and moment < since:
            continue
        if until is not None and moment >= until:
            continue
        yield rest


def log_lines(
    chunks: Iterable[bytes],
    timestamps: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    regex: str | None = None,
) -> Iterator[str]:
    """Whole lines (each with its ``\\n``) of a pod log byte stream, filtered.

    Args:
        chunks: the raw log bytes as they arrive
        timestamps: the lines start with the kubelet's timestamp (to filter by time and strip)
        since: keep lines written at or after it
        until: keep lines written before it
        regex: keep lines it matches (``re.search``)
    """
    lines: Iterator[str] = lines_from_chunks(decode_chunks(chunks))
    if timestamps:
        lines = strip_timestamps(lines, since, until)
    if regex:
        pattern = re.compile(regex)
        lines = (line for line in lines if pattern.search(line))
    return lines
