"""Builtins run for real, as processes of core's test scheduler (``procs``: replicas run in the
submitter's directory, as on local_cwd), so no scheduler distribution is needed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner import Runner, get_runner
from torchx.specs import AppState
from torchx.testing import PASSTHROUGH_ARGS, hostile_value
from torchx.testing.procs import use_procs

SCHED = "procs"


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    use_procs(tmp_path, monkeypatch)
    with get_runner("components-test") as r:
        yield r


def run(runner: Runner, component: str, args: list[str], role: str) -> tuple[AppState, str]:
    """Runs a component, waits for it; returns its final state and replica 0's log."""
    handle = runner.run_component(component, args, scheduler=SCHED)
    status = runner.wait(handle, wait_interval=0.2, timeout=120)
    assert status is not None, f"{handle}: no status"
    return status.state, "".join(runner.log_lines(handle, role, 0))


def test_echo(runner: Runner) -> None:
    state, log = run(runner, "utils.echo", ["--msg", "hello from ${app_id}"], "echo")
    assert state == AppState.SUCCEEDED
    assert log.startswith("hello from ")
    assert "${app_id}" not in log


def test_echo_replicas(runner: Runner) -> None:
    handle = runner.run_component("utils.echo", ["--msg", "hi", "--num_replicas", "2"], scheduler=SCHED)
    status = runner.wait(handle, wait_interval=0.2, timeout=120)
    assert status is not None
    assert status.state == AppState.SUCCEEDED
    assert [list(runner.log_lines(handle, "echo", k)) for k in (0, 1)] == [["hi\n"], ["hi\n"]]


def test_touch(runner: Runner, isolated: Path) -> None:
    state, _ = run(runner, "utils.touch", ["--file", "touched.txt"], "touch")
    assert state == AppState.SUCCEEDED
    assert (isolated / "touched.txt").is_file()


def test_sh_passes_arguments_literally(runner: Runner) -> None:
    state, log = run(runner, "utils.sh", ["--", "echo", "a  b", "$HOME", "x;y"], "sh")
    assert state == AppState.SUCCEEDED
    assert log == "a  b $HOME x;y\n"


def test_sh_failure_is_reported(runner: Runner) -> None:
    state, _ = run(runner, "utils.sh", ["--", "sh", "-c", "exit 3"], "sh")
    assert state == AppState.FAILED


def test_python_script_positional_form(runner: Runner, isolated: Path) -> None:
    (isolated / "hello.py").write_text("import sys\nprint('hello', *sys.argv[1:])\n")
    state, log = run(runner, "utils.python", ["hello.py", "aptg"], "python")
    assert state == AppState.SUCCEEDED
    assert log == "hello aptg\n"


def test_python_module_and_code(runner: Runner) -> None:
    state, log = run(runner, "utils.python", ["-c", "import sys; print(sys.argv[1:])", "x", "y z"], "python")
    assert state == AppState.SUCCEEDED
    assert log == "['x', 'y z']\n"
    state, log = run(runner, "utils.python", ["-m", "json.tool", "--", "--help"], "python")
    assert state == AppState.SUCCEEDED
    assert "usage:" in log
    assert "json.tool" in log


def test_booth_and_copy(runner: Runner, isolated: Path) -> None:
    state, _ = run(runner, "utils.booth", ["--x1", "1", "--x2", "2", "--tracker_base", str(isolated / "r")], "booth")
    assert state == AppState.SUCCEEDED
    assert json.loads((isolated / "r" / "0.json").read_text()) == {"booth_eval": 5.0}
    pytest.importorskip("fsspec")
    state, log = run(runner, "utils.copy", ["--src", "r/0.json", "--dst", "copied.json"], "torchx-utils-copy")
    assert state == AppState.SUCCEEDED, log
    assert (isolated / "copied.json").read_text() == (isolated / "r" / "0.json").read_text()


def test_dryrun_names_torchrun(runner: Runner) -> None:
    info = runner.dryrun_component("dist.ddp", ["-j", "2x1", "--script", "t.py"], scheduler=SCHED)
    assert "torchrun" in str(info)


@pytest.mark.parametrize("component", ["utils.sh", "dist.ddp"])
def test_macros_from_a_hostile_working_directory_run_nothing(
    runner: Runner, isolated: Path, monkeypatch: pytest.MonkeyPatch, component: str
) -> None:
    marker = isolated / "pwned"
    cwd = isolated / hostile_value(str(marker))
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    words = ["${img_root}", "${app_id}-${replica_id}", *PASSTHROUGH_ARGS]
    if component == "utils.sh":
        args, role = ["--", "printf", "<%s>\\n", *words], "sh"
    else:  # a fake torchrun on PATH prints its arguments: no torch needed
        fake = isolated / "bin" / "torchrun"
        fake.parent.mkdir()
        fake.write_text("#!/bin/sh\nprintf '<%s>\\n' \"$@\"\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
        args, role = ["--script", "t.py", "--", *words], "t"
    handle = runner.run_component(component, args, scheduler=SCHED)
    status = runner.wait(handle, wait_interval=0.2, timeout=120)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    app_id = handle.rsplit("/", 1)[1]
    lines = "".join(runner.log_lines(handle, role, 0))
    expected = "".join(f"<{w}>\n" for w in [str(cwd), f"{app_id}-0", *PASSTHROUGH_ARGS])
    assert lines.endswith(expected)
    assert not marker.exists()


def test_torchserve_runs_under_torchx_module_path(runner: Runner, isolated: Path) -> None:
    (isolated / "m.mar").write_bytes(b"model")
    args = ["--model_path", "m.mar", "--management_api", "http://127.0.0.1:9", "--dryrun", "--port", "0"]
    state, log = run(runner, "serve.torchserve", args, "worker")
    assert state == AppState.SUCCEEDED, log
    assert log.startswith("POST http://127.0.0.1:9/models?url=http%3A%2F%2F127.0.0.1%3A"), log


def test_tensorboard_runs_under_torchx_module_path(
    runner: Runner, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a stand-in tensorboard on PATH: the monitor starts it with the component's arguments
    bin_dir = isolated / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "tensorboard"
    fake.write_text('#!/bin/sh\necho "tensorboard $*"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    state, log = run(
        runner, "metrics.tensorboard", ["--logdir", "tb", "--port", "7001", "--timeout", "60"], "tensorboard"
    )
    assert state == AppState.SUCCEEDED, log
    assert log == "tensorboard --bind_all --port 7001 --logdir tb\n"
