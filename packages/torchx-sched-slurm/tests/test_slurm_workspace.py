"""The job_dir workspace: copies the workspace (honouring .torchxignore) and points the role at it."""

from __future__ import annotations

import os

from torchx import specs
from torchx_sched_slurm.scheduler import SlurmScheduler


def make_workspace(root: str) -> str:
    ws = os.path.join(root, "ws")
    os.makedirs(os.path.join(ws, "pkg"))
    os.makedirs(os.path.join(ws, "data"))
    for rel, text in {"main.py": "print(1)\n", "pkg/mod.py": "x = 1\n", "data/big.bin": "x", "notes.log": "n"}.items():
        with open(os.path.join(ws, rel), "w") as f:
            f.write(text)
    with open(os.path.join(ws, ".torchxignore"), "w") as f:
        f.write("data\n*.log\n")
    return ws


def role() -> specs.Role:
    return specs.Role("r", image="/orig", entrypoint="python", args=["main.py"], resource=specs.Resource(1, 0, 64))


def test_workspace_is_copied_into_job_dir(tmp_path: object) -> None:
    ws = make_workspace(str(tmp_path))
    job_dir = os.path.join(str(tmp_path), "job")
    r = role()
    r.workspace = specs.Workspace({ws: ""})
    SlurmScheduler("t").build_workspaces([r], {"job_dir": job_dir})
    assert r.image == job_dir
    copied = sorted(os.path.relpath(os.path.join(d, f), job_dir) for d, _, fs in os.walk(job_dir) for f in fs)
    assert copied == [".torchxignore", "main.py", "pkg/mod.py"]


def test_mapped_projects(tmp_path: object) -> None:
    ws = make_workspace(str(tmp_path))
    job_dir = os.path.join(str(tmp_path), "job")
    r = role()
    r.workspace = specs.Workspace({os.path.join(ws, "pkg"): "lib", os.path.join(ws, "main.py"): "bin/run.py"})
    SlurmScheduler("t").build_workspaces([r], {"job_dir": job_dir})
    assert os.path.exists(os.path.join(job_dir, "lib", "mod.py"))
    assert os.path.exists(os.path.join(job_dir, "bin", "run.py"))


def test_without_job_dir_nothing_is_copied(tmp_path: object) -> None:
    ws = make_workspace(str(tmp_path))
    r = role()
    r.workspace = specs.Workspace({ws: ""})
    SlurmScheduler("t").build_workspaces([r], {"job_dir": None})
    assert r.image == "/orig"


def test_job_dir_is_a_workspace_option() -> None:
    assert "job_dir" in SlurmScheduler("t").workspace_opts()
