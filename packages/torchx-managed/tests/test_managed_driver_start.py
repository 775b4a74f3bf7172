"""A managed job's driver that cannot start is told, never shown as a job that runs: real
drivers started with a Python environment that fails at import.

* The working directory of ``torchx run`` holds a ``json.py`` that raises (a user's project
  with a module named like the standard library's): the driver runs there but does not import
  from there, so the job is driven to its end.
* The environment of the look that restarts a dead driver has a ``PYTHONPATH`` shadowing
  ``torchx_managed`` with a package that raises: the restarted driver dies before taking the
  job's lock; ``status`` says so (its exit code, its error, its log) instead of ``RUNNING``,
  ``list`` reads ``UNKNOWN``; once the environment is right, the next look drives the job on.

The attempts run on the test scheduler ``procs`` (real processes), which the drivers find
through ``PYTHONPATH``."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner import Runner, get_runner
from torchx.specs import AppState
from torchx.specs.handles import parse_app_handle
from torchx.testing.apps import command_app
from torchx.testing.processes import eventually, processes_naming
from torchx.testing.procs import use_procs
from torchx_managed.journal import ManagedStore

COUNTER = str(Path(__file__).with_name("counter.py"))


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test scheduler ``procs``, registered for this test and the drivers it starts."""
    return use_procs(tmp_path, monkeypatch)


@pytest.fixture
def runner(target: str) -> Iterator[Runner]:
    with get_runner("mtest") as r:
        yield r


def _counted(handle: str) -> str:
    return (Path(ManagedStore().load(parse_app_handle(handle).app_id).spec["checkpoint_dir"]) / "count").read_text()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (the working directory off sys.path) is 3.11+")
def test_a_module_in_the_working_directory_does_not_break_the_driver(
    runner: Runner, target: str, isolated: Path
) -> None:
    (isolated / "json.py").write_text("raise ImportError('the project json.py, not the standard library')\n")
    app = command_app(sys.executable, COUNTER, "3", "0.05", "1", name="counter")  # attempt 0 exits 1
    handle = runner.run(app, "managed", {"targets": [target], "controller": "local", "max_restarts": 1})
    job_id = parse_app_handle(handle).app_id
    status = runner.wait(handle, wait_interval=0.1, timeout=60)  # only a driver starts attempt 1
    assert status is not None and status.state == AppState.SUCCEEDED, (status, ManagedStore().problem(job_id))
    assert status.num_restarts == 1 and _counted(handle) == "3"
    assert "the project json.py" not in (Path(ManagedStore().job_dir(job_id)) / "driver.log").read_text()


def test_a_driver_that_dies_at_import_is_told_not_running(
    runner: Runner, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = command_app(sys.executable, COUNTER, "3", "0.05", "1", name="counter")  # attempt 0 exits 1
    handle = runner.run(app, "managed", {"targets": [target], "controller": "local", "max_restarts": 1})
    store = ManagedStore()
    job_id = parse_app_handle(handle).app_id
    eventually(lambda: (store.driver_pid(job_id) or 0) > 0, timeout=30)
    os.kill(store.driver_pid(job_id) or 0, signal.SIGKILL)
    eventually(lambda: store.driver_pid(job_id) is None, timeout=10)

    shadow = tmp_path / "shadow" / "torchx_managed"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('a broken torchx_managed on PYTHONPATH')\n")
    procs_path = os.environ["PYTHONPATH"]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(shadow.parent), procs_path]))  # a look's driver inherits it
    log = Path(store.job_dir(job_id)) / "driver.log"
    for _ in range(2):  # each look starts a driver again, and tells that it died
        status = runner.status(handle)
        assert status is not None and status.state != AppState.RUNNING, status
        assert status.state == AppState.UNKNOWN, status
        assert status.msg.startswith("nothing drives the managed job: its driver exited with code 1"), status.msg
        assert "ImportError: a broken torchx_managed on PYTHONPATH" in status.msg and f"(see {log})" in status.msg
        assert store.driver_pid(job_id) is None
    # a look that starts nothing (list) reads the recorded problem
    assert [a.state for a in runner.list("managed") if a.app_id == job_id] == [AppState.UNKNOWN]
    assert len(ManagedStore().load(job_id).attempts) == 1  # nothing acted on attempt 0's end

    monkeypatch.setenv("PYTHONPATH", procs_path)  # fixed: the next look drives the job on
    status = runner.wait(handle, wait_interval=0.1, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    assert status.num_restarts == 1 and _counted(handle) == "3"
    assert store.problem(job_id) == ""
    eventually(lambda: not processes_naming(job_id), timeout=10)
