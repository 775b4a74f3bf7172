"""torchx.schedulers.logfiles: reading and following a replica's output file."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import pytest
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.logfiles import FileLogsScheduler, read_lines
from torchx.schedulers.streams import Stream
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import AppDef
from torchx.specs.runopts import CfgVal
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus


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


class _FileJobs(FileLogsScheduler[dict[str, object], AppDef, str]):
    """A FileLogsScheduler over a directory of finished or pending jobs (pure: no backend)."""

    capabilities = SchedulerCapabilities(log_streams=frozenset({"stdout", "stderr", "combined"}))

    def __init__(self, workdir: str, state: AppState = AppState.SUCCEEDED) -> None:
        super().__init__("files", "s")
        self.workdir, self.state = workdir, state

    def _submit_dryrun(self, app: AppDef, cfg: dict[str, object]) -> AppDryRunInfo[str]:
        raise NotImplementedError

    def schedule(self, dryrun_info: AppDryRunInfo[str]) -> str:
        raise NotImplementedError

    def _cancel_existing(self, app_id: str) -> None:
        raise NotImplementedError

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        raise NotImplementedError

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        if app_id != "7":
            return None
        replica = ReplicaStatus(id=0, state=self.state, role="r", hostname="h")
        return DescribeAppResponse(
            app_id=app_id,
            state=self.state,
            roles_statuses=[RoleStatus("r", [replica])],
            metadata={"workdir": self.workdir},
        )

    def log_file(self, app_id: str, role: str, replica_id: int, suffix: str) -> str:
        return f"job-{app_id}-{role}-{replica_id}.{suffix}"


def test_file_logs_show_all_output_by_default(tmp_path: Path) -> None:
    for suffix, text in {"out": "o1\no2\n", "err": "e1\n", "log": "o1\ne1\no2\n"}.items():
        (tmp_path / f"job-7-r-0.{suffix}").write_text(text)
    jobs = _FileJobs(str(tmp_path))
    assert "".join(jobs.log_iter("7", "r")) == "o1\ne1\no2\n"  # no streams: everything
    assert "".join(jobs.log_iter("7", "r", streams=Stream.STDOUT)) == "o1\no2\n"
    assert "".join(jobs.log_iter("7", "r", streams=Stream.STDERR)) == "e1\n"
    assert list(jobs.log_iter("7", "r", regex="^o")) == ["o1\n", "o2\n"]


def test_file_logs_errors(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    jobs = _FileJobs(str(tmp_path))
    (tmp_path / "job-7-r-0.out").write_text("o1\n")
    # as TorchX (slurm): since/until are ignored, with a warning (the files have no timestamps)
    assert list(jobs.log_iter("7", "r", since=datetime.now(), streams=Stream.STDOUT)) == ["o1\n"]
    assert "files scheduler cannot filter logs by time" in caplog.text
    (tmp_path / "job-7-r-0.out").unlink()
    with pytest.raises(ValueError, match="files job 8 is unknown"):
        jobs.log_iter("8", "r")
    with pytest.raises(ValueError, match="has no replica r/1"):
        jobs.log_iter("7", "r", 1)
    with pytest.raises(FileNotFoundError, match="must be visible from this host"):
        jobs.log_iter("7", "r")
    assert list(_FileJobs(str(tmp_path), AppState.PENDING).log_iter("7", "r")) == []  # no output yet
