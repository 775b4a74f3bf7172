"""Pod log bytes -> lines: newlines kept, UTF-8 across chunks, time and regex filters."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from torchx_sched_k8s.logs import log_lines, parse_timestamp


def test_lines_keep_newlines_and_multibyte_characters_across_chunks() -> None:
    data = "a\n\nré🚀sumé\nlast".encode()
    chunks = [data[i : i + 1] for i in range(len(data))]
    assert list(log_lines(chunks)) == ["a\n", "\n", "ré🚀sumé\n", "last"]


def test_regex_filter() -> None:
    assert list(log_lines([b"foo 1\nbar\nfoo 2\n"], regex=r"^foo")) == ["foo 1\n", "foo 2\n"]


def test_timestamps_are_stripped_and_filter_by_time() -> None:
    data = b"2026-01-01T00:00:01.123456789Z one\n2026-01-01T00:00:02Z two \n2026-01-01T00:00:03.5Z three\n"
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert list(log_lines([data], timestamps=True)) == ["one\n", "two \n", "three\n"]
    got = list(log_lines([data], timestamps=True, since=t0 + timedelta(seconds=2), until=t0 + timedelta(seconds=3)))
    assert got == ["two \n"]


def test_parse_timestamp() -> None:
    assert parse_timestamp("2026-01-01T00:00:01.123456789Z") == datetime(
        2026, 1, 1, 0, 0, 1, 123456, tzinfo=timezone.utc
    )
    assert parse_timestamp("garbage") is None
