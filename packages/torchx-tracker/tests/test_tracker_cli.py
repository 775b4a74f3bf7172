"""``torchx tracker list ...``: in-process through the CLI shell, and once as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx import testing
from torchx.cli.main import run_cli
from torchx_tracker.cli import lineage_lines
from torchx_tracker.fsspec_backend import create

CHILD = "local_cwd://torchx/train-2"
PARENT = "local_cwd://torchx/prep-1"
OTHER = "local_cwd://torchx/other-3"


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A tracker directory with a parent run, its child and an unrelated run."""
    root = str(tmp_path / "store")
    tracker = create(root)
    tracker.add_metadata(PARENT, rows=1000)
    tracker.add_artifact(PARENT, "dataset", "/data/ds.parquet", {"rows": 1000})
    tracker.add_source(CHILD, PARENT, "dataset")
    tracker.add_metadata(CHILD, lr=0.1, optimizer="adam")
    tracker.add_artifact(CHILD, "model", "/ckpt/model.pt", {"acc": 0.9})
    tracker.add_artifact(CHILD, "logs", "/ckpt/logs")
    tracker.add_metadata(OTHER, x=1)
    return root


@pytest.fixture
def configured(store: str, isolated: Path, write_torchxconfig: Callable[[Path, str], Path]) -> str:
    """``.torchxconfig`` in the cwd names the store."""
    write_torchxconfig(isolated, store)
    return store


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert run_cli(["tracker", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_list_jobs(configured: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = cli(capsys, "list", "jobs")
    assert out.split() == ["RUN", "ID", OTHER, PARENT, CHILD]
    out, _ = cli(capsys, "list", "jobs", "--parent-run-id", PARENT, "--json")
    assert json.loads(out) == [CHILD]
    out, _ = cli(capsys, "list", "jobs", "--json")
    assert json.loads(out) == [OTHER, PARENT, CHILD]


def test_list_metadata(configured: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = cli(capsys, "list", "metadata", CHILD)
    assert [line.split() for line in out.splitlines()] == [["KEY", "VALUE"], ["lr", "0.1"], ["optimizer", "adam"]]
    out, _ = cli(capsys, "list", "metadata", CHILD, "--json")
    assert json.loads(out) == {"lr": 0.1, "optimizer": "adam"}
    out, err = cli(capsys, "list", "metadata", "local_cwd://torchx/none")
    assert out == ""
    assert "has no metadata" in err


def test_list_artifacts(configured: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = cli(capsys, "list", "artifacts", CHILD)
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PATH", "METADATA"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["logs", "model"]
    assert '{"acc": 0.9}' in out
    out, _ = cli(capsys, "list", "artifacts", "--artifact", "model", CHILD, "--json")
    assert json.loads(out) == [{"name": "model", "path": "/ckpt/model.pt", "metadata": {"acc": 0.9}}]
    out, err = cli(capsys, "list", "artifacts", "--artifact", "nope", CHILD)
    assert out == ""
    assert "has no artifact 'nope'" in err


def test_list_lineage(configured: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = cli(capsys, "list", "lineage", CHILD)
    assert out.splitlines() == [CHILD, f"└── {PARENT}  (via dataset)"]
    out, _ = cli(capsys, "list", "lineage", CHILD, "--json")
    assert json.loads(out) == {
        "run_id": CHILD,
        "sources": [{"source_run_id": PARENT, "artifact_name": "dataset"}],
        "parents": [{"run_id": PARENT, "sources": [], "parents": []}],
    }


def test_lineage_tree_drawing() -> None:
    tracker = create("memory://torchx-tracker-test-draw")
    try:
        tracker.add_source("c", "b1", "m")
        tracker.add_source("c", "b2")
        tracker.add_source("b1", "a")
        assert lineage_lines(tracker.lineage("c")) == ["c", "├── b1  (via m)", "│   └── a", "└── b2"]
    finally:
        tracker.fs.rm(tracker.root, recursive=True)


def test_flags_pick_the_tracker_before_or_after_list(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = cli(capsys, "--tracker", "fsspec", "--config", store, "list", "jobs", "--json")
    assert json.loads(out) == [OTHER, PARENT, CHILD]
    out, _ = cli(capsys, "list", "metadata", OTHER, "--tracker", "fsspec", "--config", store, "--json")
    assert json.loads(out) == {"x": 1}


def test_flags_override_the_config_file(configured: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = create(str(tmp_path / "other"))
    other.add_metadata("local_cwd://torchx/elsewhere", y=2)
    out, _ = cli(capsys, "list", "jobs", "--json", "--tracker", "fsspec", "--config", str(tmp_path / "other"))
    assert json.loads(out) == ["local_cwd://torchx/elsewhere"]


def test_tracker_flag_reads_its_config_section(configured: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = cli(capsys, "--tracker", "fsspec", "list", "jobs", "--json")
    assert json.loads(out) == [OTHER, PARENT, CHILD]


def test_user_config_in_home_is_read(
    store: str, isolated: Path, capsys: pytest.CaptureFixture[str], write_torchxconfig: Callable[[Path, str], Path]
) -> None:
    import os

    write_torchxconfig(Path(os.environ["HOME"]), store)
    out, _ = cli(capsys, "list", "jobs", "--json")
    assert json.loads(out) == [OTHER, PARENT, CHILD]


def test_environment_fallback(store: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TORCHX_TRACKERS", "fsspec")
    monkeypatch.setenv("TORCHX_TRACKER_FSSPEC_CONFIG", store)
    out, _ = cli(capsys, "list", "jobs", "--json")
    assert json.loads(out) == [OTHER, PARENT, CHILD]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["list", "jobs"], "no tracker configured: add `[torchx:tracker]`"),
        (["--config", "/x", "list", "jobs"], "--config needs --tracker NAME"),
        (["--tracker", "nope", "--config", "/x", "list", "jobs"], "unknown tracker 'nope'; installed: fsspec"),
        (["--tracker", "fsspec", "list", "jobs"], "the fsspec tracker needs a root directory"),
    ],
)
def test_errors(argv: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("(", r"\(")):
        run_cli(["tracker", *argv])


def test_subprocess_with_config_and_clear_errors(configured: str, isolated: Path, tmp_path: Path) -> None:
    proc = testing.run_cli("tracker", "list", "artifacts", CHILD, "--json", cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    assert {a["name"] for a in json.loads(proc.stdout)} == {"model", "logs"}

    empty = tmp_path / "empty"
    empty.mkdir()
    proc = testing.run_cli("tracker", "list", "jobs", cwd=empty)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "torchx: error: no tracker configured: add `[torchx:tracker]` with a line `fsspec =` and `[tracker:fsspec]`"
        " with `config = /path/to/tracker/dir` to .torchxconfig, or pass --tracker fsspec --config /path/to/tracker/dir"
    ]
    proc = testing.run_cli("tracker", cwd=empty)
    assert proc.returncode == 2
    assert "the following arguments are required: {list}" in proc.stderr


def test_help_imports_no_backend_library() -> None:
    code = (
        "import sys, contextlib, io, json\n"
        "from torchx.cli.main import run_cli\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    for argv in (['--help'], ['tracker', 'list', 'jobs', '--help']):\n"
        "        try: run_cli(argv)\n"
        "        except SystemExit: pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('fsspec', 'mlflow'))\n"
        "print(json.dumps({'heavy': heavy, 'help': buf.getvalue()}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert "--parent-run-id" in result["help"]
    assert result["heavy"] == []
