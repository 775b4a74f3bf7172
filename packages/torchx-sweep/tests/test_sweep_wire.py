"""The driver-submitter messages: a frame of trials (with or without their dry runs) over a real socket."""

from __future__ import annotations

import socket

import pytest
from torchx.specs.dryrun import AppDryRunInfo
from torchx_sweep import wire


def test_frames_round_trip_and_end_of_socket_is_eof() -> None:
    a, b = socket.socketpair()
    reader = b.makefile("rb", buffering=0)
    info: AppDryRunInfo[list[str]] = AppDryRunInfo(["sbatch", "x y"], repr)
    a.sendall(wire.frame([(3, info), (4, None)]) + wire.frame([]))
    got = wire.read_frame(reader)
    assert [i for i, _ in got] == [3, 4]
    assert got[1][1] is None
    first = got[0][1]
    assert first is not None
    assert first.request == ["sbatch", "x y"]
    assert wire.read_frame(reader) == []
    a.sendall(wire.frame([(5, None)])[:3])  # torn: the writer died mid-frame
    a.close()
    with pytest.raises(EOFError):
        wire.read_frame(reader)
    b.close()


def test_an_unpicklable_request_is_sent_without_it() -> None:
    a, b = socket.socketpair()
    info: AppDryRunInfo[object] = AppDryRunInfo(lambda: "req")  # a request holding a lambda does not pickle
    a.sendall(wire.frame([(1, info)]))
    assert wire.read_frame(b.makefile("rb", buffering=0)) == [(1, None)]
    a.close()
    b.close()
