"""Documented TorchX 0.7 names of the tracker, runtime and workspace modules, used as their docs show."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from torchx import specs


def test_fsspec_result_tracker_as_in_its_docstring(tmp_path: Path) -> None:
    pytest.importorskip("torchx_tracker")
    pytest.importorskip("fsspec")
    from torchx.runtime.tracking import FsspecResultTracker as FromPackage
    from torchx.runtime.tracking.api import FsspecResultTracker

    assert FromPackage is FsspecResultTracker
    base = str(tmp_path / "foobar")
    tracker = FsspecResultTracker(base)
    tracker["attempt_1/out"] = {"accuracy": 0.233}
    assert FsspecResultTracker(base)["attempt_1/out"]["accuracy"] == 0.233
    assert FsspecResultTracker(base)["never_written"] == {}


def test_generate_filename_is_time_ordered_and_unique() -> None:
    pytest.importorskip("torchx_tracker")
    from torchx.tracker.backend.fsspec import generate_filename

    names = [generate_filename() for _ in range(200)]
    assert len(set(names)) == len(names)
    assert names == sorted(names)
    assert all(isinstance(n, str) and n for n in names)


def test_tmp_dir_workspace_mixin(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_slurm")
    from torchx.workspace.dir_workspace import TmpDirWorkspaceMixin

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text("print('hi')\n")
    (ws / "skip.log").write_text("x")
    (ws / ".torchxignore").write_text("*.log\n")
    role = specs.Role("r", image="unused", entrypoint="python")
    TmpDirWorkspaceMixin().build_workspace_and_update_role(role, str(ws), {})
    job_dir = Path(role.image)
    assert job_dir.name.startswith("torchx_workspace")
    assert (job_dir / "train.py").read_text() == "print('hi')\n"
    assert not (job_dir / "skip.log").exists()


def test_print_push_events() -> None:
    pytest.importorskip("torchx_sched_local")
    pytest.importorskip("docker")
    from torchx.workspace.docker_workspace import print_push_events

    out = io.StringIO()
    events = [
        {"status": "The push refers to repository [registry.example/app]"},
        {"id": "abc", "status": "Preparing"},
        {"id": "abc", "status": "Pushing", "progress": "[==>  ]"},
        {"id": "abc", "status": "Pushed"},
        {"progressDetail": {}},
    ]
    print_push_events(events, stream=out)
    blue, up, down = "\x1b[34mdocker push \x1b[0m", "\x1b[1F\x1b[2K", "\x1b[1E"
    assert out.getvalue() == (
        f"{blue}The push refers to repository [registry.example/app]\n"
        f"{blue}abc: Preparing \n"
        f"{up}{blue}abc: Pushing [==>  ]{down}"
        f"{up}{blue}abc: Pushed {down}"
    )
    with pytest.raises(RuntimeError, match="^failed to push docker image: denied"):
        print_push_events([{"error": "denied: requested access to the resource is denied"}], stream=out)


def test_torchx_argument_help_formatter() -> None:
    import argparse

    from torchx.specs.file_linter import TorchXArgumentHelpFormatter

    parser = argparse.ArgumentParser(prog="comp", formatter_class=TorchXArgumentHelpFormatter)
    parser.add_argument("--msg", help="what to say", required=True)
    parser.add_argument("--n", help="how often", default=3)
    text = parser.format_help()
    assert "what to say (required)" in text
    assert "how often (default: 3)" in text
