"""``kubernetes`` without the docker SDK (issue 31): the current directory is a workspace by
default, and building it needs the SDK. A dry run builds nothing, so it needs no SDK; a real
run fails in one line that says how to run without a workspace, and that way runs.

The SDK is made missing for real: the ``torchx`` process finds first a ``docker`` package whose
import raises (a broken or absent install), so any import of it shows.

Here, not in torchx-sched-k8s: it needs torchx-sched-local's docker workspace and
torchx-components' ``utils.echo`` (the e2e session installs every package).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from torchx.testing.cli import run_torchx


@pytest.fixture
def no_docker(tmp_path: Path) -> dict[str, str]:
    """The environment of a ``torchx`` whose ``import docker`` fails (the docker workspace is
    torchx-sched-local's, which the e2e session installs with every package)."""
    fake = tmp_path / "no-docker" / "docker"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("the docker SDK is missing in this test")\n')
    path = os.pathsep.join(p for p in (str(fake.parent), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A current directory with a file, as a user's project."""
    where = tmp_path / "project"
    where.mkdir()
    (where / "train.py").write_text("print('hi')\n")
    return where


def test_dry_run_shows_the_build_and_push_without_the_sdk(no_docker: dict[str, str], project: Path) -> None:
    code, out, err = run_torchx(
        "run",
        "--dryrun",
        "-s",
        "kubernetes",
        "-cfg",
        "mode=jobs,image_repo=registry.example.com/team/app",
        "utils.echo",
        cwd=project,
        env=no_docker,
    )
    assert code == 0, err
    assert "Traceback" not in err and "docker SDK" not in err
    assert (
        "=== a real run first does: role 'echo': build an image FROM ghcr.io/pytorch/torchx:0.7.0 with workspace"
        f" {project} copied in, then push it to registry.example.com/team/app:<its image id> ===" in err
    )
    assert f'image: "<image built from ghcr.io/pytorch/torchx:0.7.0 + workspace {project}>"' in out


def test_real_run_without_the_sdk_says_how_to_run_without_a_workspace(no_docker: dict[str, str], project: Path) -> None:
    code, out, err = run_torchx(
        "run", "-s", "kubernetes", "-cfg", "mode=jobs", "utils.echo", cwd=project, env=no_docker
    )
    assert code != 0
    assert out == ""
    assert err.splitlines() == [
        "torchx: error: the docker SDK cannot be imported (the docker SDK is missing in this test):"
        " pip install 'torchx-sched-local[docker]'; or run the image as it is, without a workspace: --workspace \"\""
    ]


@pytest.mark.k8s
def test_the_suggested_run_without_a_workspace_runs(
    no_docker: dict[str, str], project: Path, k8s_cluster: Any, k8s_cfg: dict[str, Any]
) -> None:
    """What the error suggests works: the image runs as it is, and the job succeeds."""
    cfg = ",".join(f"{k}={v}" for k, v in k8s_cfg.items())
    code, out, err = run_torchx(
        "run",
        "--wait",
        "--workspace",
        "",
        "-s",
        "kubernetes",
        "-cfg",
        cfg,
        "utils.echo",
        "--image",
        k8s_cluster.image,
        "--msg",
        "no workspace",
        cwd=project,
        env=no_docker,
    )
    assert code == 0, err
    assert "docker SDK" not in err
    handle = out.strip().splitlines()[0]
    assert handle.startswith(f"kubernetes://torchx/{k8s_cluster.namespace}:echo-")
    code, out, err = run_torchx("status", handle, env=no_docker)
    assert code == 0, err
    assert out.startswith("SUCCEEDED"), out
    run_torchx("delete", handle, env=no_docker)
