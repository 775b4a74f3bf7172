from __future__ import annotations

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
