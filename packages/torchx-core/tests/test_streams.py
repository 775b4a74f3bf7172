"""Log bytes -> lines, written once for every scheduler (torchx.schedulers.streams)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx.schedulers.streams import decode_chunks, lines_from_chunks


def cut(data: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab\n\r\u2028é€😀")), st.lists(st.integers(min_value=0), max_size=12))
def test_lines_do_not_depend_on_how_the_bytes_were_cut(text: str, points: list[int]) -> None:
    data = text.encode()
    lines = list(lines_from_chunks(decode_chunks(cut(data, points))))
    assert "".join(lines) == text
    # only \n ends a line: \r and U+2028 stay inside
    assert all(line.endswith("\n") for line in lines[:-1])
    assert all("\n" not in line[:-1] for line in lines)


def test_invalid_bytes_are_replaced_not_fatal() -> None:
    assert list(lines_from_chunks(decode_chunks([b"ok\xff\n", b"\xe2\x82", b"\xac\n"]))) == ["ok\ufffd\n", "€\n"]


def test_one_long_line_in_many_pieces_is_joined_once() -> None:
    pieces = ["x" * 1000] * 2000 + ["\n", "tail"]
    assert list(lines_from_chunks(pieces)) == ["x" * 2_000_000 + "\n", "tail"]


def test_tee_copies_sources_into_out(tmp_path: Path) -> None:
    from torchx.schedulers.streams import Tee

    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    a.write_bytes(b"first\n")
    b.write_bytes(b"")
    tee = Tee(open(out, "wb"), str(a), str(b))  # noqa: SIM115 - Tee closes it
    with open(b, "ab") as f:
        f.write(b"second\n")
    tee.write(b"direct\n")
    tee.close()
    tee.close()  # idempotent
    assert tee.closed
    assert sorted(out.read_bytes().splitlines()) == [b"direct", b"first", b"second"]
    with open(out, "wb") as f, pytest.raises(ValueError):
        Tee(f)
