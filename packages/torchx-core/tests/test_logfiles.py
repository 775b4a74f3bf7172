"""torchx.schedulers.logfiles: reading and following a replica's output file."""

from __future__ import annotations

import os
import threading
import time

from torchx.schedulers.logfiles import read_lines


def test_reads_whole_lines_and_a_last_partial_one(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "f.out")
    with open(path, "wb") as f:
        f.write("a\nü€\n".encode() + b"\xff bad\nlast")
    assert list(read_lines(path, False, lambda: True)) == ["a\n", "ü€\n", "\ufffd bad\n", "last"]


def test_missing_file_without_tail_is_empty(tmp_path: object) -> None:
    assert list(read_lines(os.path.join(str(tmp_path), "none"), False, lambda: False)) == []


def test_tail_waits_for_the_file_and_follows_until_the_end(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "f.out")
    done = threading.Event()

    def writer() -> None:
        time.sleep(0.1)
        with open(path, "w") as f:
            for i in range(5):
                f.write(f"line {i}\n")
                f.flush()
                time.sleep(0.05)
            f.write("tail")
        done.set()

    threading.Thread(target=writer).start()
    got = list(read_lines(path, True, done.is_set, poll=0.01))
    assert got == [f"line {i}\n" for i in range(5)] + ["tail"]
