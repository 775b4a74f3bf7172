"""local_cwd runs every replica in the launcher's working directory (the seeds: "for local_cwd
[the image] is the current working directory"), as upstream's CWDImageProvider does."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from torchx import specs
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import command_app, run_cli
from torchx_sched_local.local_scheduler import LocalScheduler


def _run(sched: LocalScheduler, appdef: specs.AppDef, cfg: dict[str, object] | None = None) -> str:
    """Runs the app to its end; returns replica 0's stdout (fails the test if the app failed)."""
    app_id = sched.submit(appdef, cfg or {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    return "".join(sched.log_iter(app_id, appdef.roles[0].name, 0, streams=Stream.STDOUT))


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("image", ["ghcr.io/pytorch/torchx:latest", "/tmp", "/no/such/dir", "", "."], ids=str)
def test_every_replica_starts_in_the_launchers_cwd_whatever_the_image(
    sched: LocalScheduler, isolated: Path, image: str
) -> None:
    role = specs.Role("r", image=image, entrypoint="pwd", num_replicas=2)
    app_id = sched.submit(specs.AppDef("cwd", [role]), {})
    assert sched.wait(app_id, timeout=30).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    for k in (0, 1):
        assert "".join(sched.log_iter(app_id, "r", k)) == f"{isolated}\n"


def test_img_root_is_the_cwd(sched: LocalScheduler, isolated: Path) -> None:
    role = specs.Role(
        "r",
        image="/tmp",
        entrypoint="sh",
        args=["-c", 'echo "$1 $IMG"', "sh", specs.macros.img_root],
        env={"IMG": specs.macros.img_root},
    )
    assert _run(sched, specs.AppDef("img", [role])) == f"{isolated} {isolated}\n"


def test_relative_entrypoints_in_the_cwd_run_from_there(sched: LocalScheduler, isolated: Path) -> None:
    _script(isolated / "train_main.py", 'echo "train $1"\n')
    _script(isolated / "hello.sh", 'echo "hello from $(pwd)"\n')
    (isolated / "sub").mkdir()
    _script(isolated / "sub" / "deep.sh", "echo deep\n")
    assert _run(sched, command_app("train_main.py", "x", image="/somewhere/else")) == "train x\n"
    assert _run(sched, command_app("./hello.sh", image="img:latest")) == f"hello from {isolated}\n"
    assert _run(sched, command_app("sub/deep.sh")) == "deep\n"


def test_names_not_in_the_cwd_are_looked_up_on_path(
    sched: LocalScheduler, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "only-on-path", "echo from path\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert _run(sched, command_app("only-on-path")) == "from path\n"
    # a name on PATH and in the cwd: PATH wins (the cwd ends the PATH, as upstream) unless prepend_cwd
    _script(isolated / "only-on-path", "echo from cwd\n")
    assert _run(sched, command_app("only-on-path")) == "from path\n"
    assert _run(sched, command_app("only-on-path"), {"prepend_cwd": True}) == "from cwd\n"


def test_the_cwd_ends_the_replicas_path(sched: LocalScheduler, isolated: Path) -> None:
    out = _run(sched, command_app(sys.executable, "-c", "import os; print(os.environ['PATH'])"))
    assert out.rstrip("\n").split(os.pathsep)[-1] == str(isolated)
    out = _run(sched, command_app(sys.executable, "-c", "import os; print(os.environ['PATH'])"), {"prepend_cwd": True})
    assert out.split(os.pathsep)[0] == str(isolated)


def test_a_role_path_gets_the_cwd_too(sched: LocalScheduler, isolated: Path) -> None:
    role = specs.Role("r", image=".", entrypoint="sh", args=["-c", 'echo "$PATH"'], env={"PATH": "/usr/bin:/bin"})
    assert _run(sched, specs.AppDef("p", [role])) == f"/usr/bin:/bin:{isolated}\n"


def test_relative_output_files_land_in_the_cwd(sched: LocalScheduler, isolated: Path) -> None:
    _run(sched, command_app("sh", "-c", "echo written > out.txt", image="/tmp", replicas=1))
    assert (isolated / "out.txt").read_text() == "written\n"
    assert not Path("/tmp/out.txt").exists() or Path("/tmp/out.txt").read_text() != "written\n"


COMPONENT = '''
import torchx.specs as specs


def script(path: str, image: str = "/opt/some/image") -> specs.AppDef:
    """Runs path (relative to where torchx run is called)."""
    return specs.AppDef("script", [specs.Role("s", image=image, entrypoint=path)])
'''


def test_cli_runs_a_relative_script_from_the_directory_it_is_called_in(isolated: Path) -> None:
    project = isolated / "project"
    project.mkdir()
    (project / "comp.py").write_text(textwrap.dedent(COMPONENT))
    _script(project / "hello.sh", 'echo "hi from $(pwd)"; echo result > result.txt\n')
    os.chdir(project)
    proc = run_cli("run", "-s", "local_cwd", "comp.py:script", "--path", "./hello.sh")
    assert proc.returncode == 0, proc.stderr
    assert f"s/0 hi from {project}" in proc.stdout
    assert (project / "result.txt").read_text() == "result\n"
