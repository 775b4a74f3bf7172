from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx.specs import MalformedAppHandleException, make_app_handle, parse_app_handle


@pytest.mark.parametrize(
    "handle, parts",
    [
        ("local_cwd://torchx/echo-123", ("local_cwd", "torchx", "echo-123")),
        ("kubernetes:///ns:job", ("kubernetes", "", "ns:job")),
        ("slurm://s/1234/trainer/0", ("slurm", "s", "1234/trainer/0")),
    ],
)
def test_parse(handle: str, parts: tuple[str, str, str]) -> None:
    assert tuple(parse_app_handle(handle)) == parts
    assert make_app_handle(*parts) == handle


@pytest.mark.parametrize(
    "bad", ["", "garbage", "local_cwd://", "local_cwd://s/", "://s/a", "a:/s/b", "x://a b/c", "x://s/a b"]
)
def test_malformed(bad: str) -> None:
    with pytest.raises(MalformedAppHandleException, match="is not an app handle"):
        parse_app_handle(bad)


@given(st.text())
def test_parse_never_raises_anything_else(text: str) -> None:
    try:
        parsed = parse_app_handle(text)
    except MalformedAppHandleException:
        return
    assert make_app_handle(*parsed) == text


@given(
    st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True),
    st.from_regex(r"[a-z0-9]{0,8}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_.:\-]{1,20}", fullmatch=True),
)
def test_roundtrip(scheduler: str, session: str, app_id: str) -> None:
    assert parse_app_handle(make_app_handle(scheduler, session, app_id)) == (scheduler, session, app_id)


def test_parsed_handle_reads_as_upstreams_named_tuple() -> None:
    parsed = parse_app_handle("local_cwd://torchx/echo-1")
    scheduler, session, app_id = parsed
    assert (scheduler, session, app_id) == ("local_cwd", "torchx", "echo-1") == parsed
    assert (parsed.scheduler_backend, parsed[2], len(parsed)) == ("local_cwd", "echo-1", 3)
    assert dataclasses.asdict(parsed) == {
        "scheduler_backend": "local_cwd",
        "session_name": "torchx",
        "app_id": "echo-1",
    }
    with pytest.raises(AttributeError):
        parsed.app_id = "x"
    assert {parsed: 1}[parse_app_handle("local_cwd://torchx/echo-1")] == 1
