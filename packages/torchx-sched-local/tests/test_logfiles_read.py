"""Reading stored log bytes back as lines (:func:`torchx_sched_local.logfiles._read_range`):
whatever the block size, a character cut by a block's end, bytes that are not UTF-8 and lines
longer than a block come back exactly (``surrogateescape`` gives the bytes back)."""

from __future__ import annotations

import io
import random

import pytest
from torchx_sched_local import logfiles


def _random_log(rng: random.Random) -> bytes:
    parts = []
    for _ in range(rng.randint(1, 30)):
        kind = rng.random()
        if kind < 0.3:
            parts.append("é€😀".encode() * rng.randint(0, 5))
        elif kind < 0.5:
            parts.append(bytes([rng.randint(128, 255)]))  # not UTF-8
        elif kind < 0.7:
            parts.append(b"\n")
        else:
            parts.append(b"x" * rng.randint(0, 20))
    return b"".join(parts) + b"\n"


@pytest.mark.parametrize("block", [1, 2, 3, 4, 5, 7, 64, 1 << 20])
def test_lines_come_back_byte_for_byte_whatever_the_block_size(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfiles, "_BLOCK", block)
    rng = random.Random(block)
    for _ in range(40):
        data = _random_log(rng)
        f = io.BytesIO(b"before" + data + b"after")
        lines = [line for chunk in logfiles._read_range(f, 6, 6 + len(data)) for line in chunk]
        assert "".join(lines).encode("utf-8", "surrogateescape") == data
        assert [line[:-1] for line in lines] == data.decode("utf-8", "surrogateescape").split("\n")[:-1]
