"""A durable job's store on a disk that is full, with a real 1 MiB tmpfs (needs root): a job
that cannot be stored leaves nothing and the error names the file; a stored job's driver can
still take its lock with its pid and record why it cannot go on; a journal append the disk
refuses names the journal; a driver that stops on an error records it."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner.drivers import drive
from torchx.testing import fill_disk, small_tmpfs, unmount
from torchx.util.durable import DurableStore, RecordError

PAGE = 4096


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    path = small_tmpfs(tmp_path / "disk", "1m")
    try:
        yield path
    finally:
        unmount(path)


def test_a_job_that_cannot_be_stored_leaves_nothing_and_names_the_file(disk: Path) -> None:
    store = DurableStore(str(disk / "jobs"))
    os.makedirs(store.root)
    fill_disk(disk)
    with pytest.raises(OSError) as raised:
        store.create("j1", {"x": "y" * 100})
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == os.path.join(store.root, "j1", "spec.json")
    assert os.listdir(store.root) == []  # no job directory, no spec.json.*.tmp
    said = str(RecordError("job j1", raised.value))
    assert said == f"cannot record job j1: no space left on device ({store.root}/j1/spec.json)"


def test_on_a_full_disk_the_driver_takes_its_lock_and_says_why_it_cannot_record(disk: Path) -> None:
    store = DurableStore(str(disk / "jobs"))
    store.create("j1", {"session": "s"})
    events = Path(store.job_dir("j1")) / "events.jsonl"
    events.write_text("x" * (PAGE - 1) + "\n")  # the journal's last page is full: the next append needs one
    fill_disk(disk)
    with pytest.raises(OSError) as raised:
        store.append("j1", {"ev": "ended", "n": 0}, sync=True)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(events)
    fd = store.take_driver_lock("j1")
    assert fd is not None
    try:
        assert store.driver_pid("j1") == os.getpid()  # written in place: no space needed
        assert store.report_problem("j1", "cannot record the end of attempt 0:\nno space left")
        assert store.problem("j1") == "cannot record the end of attempt 0: no space left"
        store.clear_problem("j1")
        assert store.problem("j1") == ""
    finally:
        os.close(fd)
    assert store.driver_pid("j1") is None


def test_a_driver_that_stops_on_an_error_records_it(tmp_path: Path) -> None:
    store = DurableStore(str(tmp_path / "jobs"))
    store.create("j1", {"session": "s"})

    class Failing:
        def request_stop(self) -> None:
            pass

        def run(self) -> None:
            raise RuntimeError("the app pickle is unreadable")

    with pytest.raises(RuntimeError):
        drive(store, ["j1"], lambda job_id, runner: Failing(), logging.getLogger("test"))
    assert store.problem("j1") == "its driver stopped: RuntimeError: the app pickle is unreadable"
    assert store.driver_pid("j1") is None
