"""``.torchxignore`` keeps exactly the files Docker keeps for the same ``.dockerignore`` (the docker
CLI builds the context with Docker's own pattern matcher; marker ``docker``)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from torchx.workspace.files import walk_workspace

pytestmark = pytest.mark.docker

TREE = [
    "a.pyc",
    "main.py",
    "pkg/b.pyc",
    "pkg/mod.py",
    "pkg/deep/c.pyc",
    "pkg/deep/keep.txt",
    "data/big.bin",
    "data/small.txt",
    "logs/x.log",
    ".git/config",
    "notes.md",
    "README.md",
    "we ird/[x].txt",
]

IGNORES = [
    "*.pyc",
    "**/*.pyc",
    "/data/",
    "data\n!data/small.txt",
    "*.md\n!README.md",
    "!README.md\n*.md",
    "# comment\n\n  logs  \n.git",
    "pkg/?od.py",
    "[a-b].pyc",
    "pkg/**/*.txt",
    "pkg/**\n!pkg/deep",
    "main\\.py",
    "./pkg/../main.py",
    "we ird/\\[x].txt",
    "*/*.txt\n!*/small*",
]


def files_docker_keeps(root: Path, image: str) -> set[str]:
    tag = f"localhost/torchx-ignore-test:{uuid.uuid4().hex[:12]}"
    dockerfile = f"FROM {image}\nCOPY . /ctx\n"
    subprocess.run(["docker", "build", "-q", "-t", tag, "-f", "-", str(root)], input=dockerfile, text=True,
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    try:
        out = subprocess.run(["docker", "run", "--rm", tag, "find", "/ctx", "-type", "f"], check=True,
                             capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)
    return {line[len("/ctx/") :] for line in out.splitlines() if line.startswith("/ctx/")}


@pytest.mark.parametrize("ignore", IGNORES)
def test_same_files_as_docker(docker_live: dict[str, str], tmp_path: Path, ignore: str) -> None:
    if shutil.which("docker") is None:
        pytest.fail("the docker CLI is not on PATH")
    root = tmp_path / "ctx"
    for rel in TREE:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / ".torchxignore").write_text(ignore + "\n")
    (root / ".dockerignore").write_text(ignore + "\n")
    ours = set(walk_workspace(str(root)))
    docker = files_docker_keeps(root, docker_live["TORCHX_TEST_BUSYBOX_IMAGE"])
    assert ours == docker, f"torchx only: {sorted(ours - docker)}; docker only: {sorted(docker - ours)}"
