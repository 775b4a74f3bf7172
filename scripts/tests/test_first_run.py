"""The first-run paths of the set-up scripts, on a machine that already has everything.

`bash scripts/test-all.sh` runs twice in one throwaway copy of this machine that looks fresh to
it (first-run-sandbox.sh: overlay root, own namespaces, caches and state hidden, installers and
daemons replaced by recording stand-ins). The first run must take every install/build branch
(apt-get, debootstrap, the OpenLava and Kubernetes builds, the venvs) under `set -u` and bring
every backend "up"; the second must find everything present and install nothing. Needs root;
outside CI (CI=true) it is skipped without root.

    nox -s setup-scripts        # or, as root: pytest scripts/tests
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SANDBOX = REPO / "scripts" / "tests" / "first-run-sandbox.sh"


def _usable() -> str | None:
    if os.geteuid() != 0:
        return "needs root (namespaces, overlayfs, chroot)"
    for tool, package in (("unshare", "util-linux"), ("ip", "iproute2")):
        if not shutil.which(tool):
            return f"needs {tool} ({package})"
    return None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    why = _usable()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the first-run test {why}; CI must run it")
        pytest.skip(why)
    out = tmp_path_factory.mktemp("first-run")
    cmd = "bash scripts/test-all.sh --list"  # nox is a stand-in: its arguments only get recorded
    subprocess.run(["bash", str(SANDBOX), str(out), cmd, cmd], check=True, timeout=600)
    yield out


def output(out: Path, i: int) -> str:
    return (out / f"run{i}.out").read_text()


def calls(out: Path, i: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / f"calls{i}.jsonl").read_text().splitlines()]


def installs(out: Path, i: int) -> list[str]:
    """Every install or build the stand-ins saw, as 'tool arg...' strings."""
    seen = []
    for c in calls(out, i):
        name, args = c["name"], c["args"]
        if (
            (name == "apt-get" and "install" in args)
            or name in ("debootstrap", "make", "gcc")
            or (name == "pip" and "install" in args)
            or (name in ("python3", "python") and args[:2] == ["-m", "venv"])
        ):
            seen.append(" ".join([name, *args]))
    return seen


def test_first_run_succeeds_under_set_u(runs: Path) -> None:
    text = output(runs, 1)
    assert (runs / "run1.rc").read_text().strip() == "0", text
    for bad in ("unbound variable", "command not found", "syntax error", "No such file"):
        assert bad not in text, text
    assert "all up: docker slurm lsf k8s moto ray" in text, text


def test_first_run_installs_and_builds_everything_missing(runs: Path) -> None:
    done = installs(runs, 1)
    apt = " ".join(d for d in done if d.startswith("apt-get"))
    for pkg in ("zsh", "fish", "strace", "docker.io", "debootstrap", "slurmctld", "mariadb-server", "etcd-server"):
        assert pkg in apt.split(), (pkg, done)
    (lsf_deps,) = [d.split() for d in done if d.startswith("apt-get") and "tcl-dev" in d.split()]
    for dep in ("autoconf", "bison", "make", "gcc", "libtirpc-dev", "libc6-dev"):  # OpenLava's build deps
        assert dep in lsf_deps, (dep, done)
    assert "golang-1.19-go" in apt.split(), done
    assert any(d.startswith("debootstrap ") and "bookworm" in d for d in done), done
    makes = [c for c in calls(runs, 1) if c["name"] == "make"]
    assert any("install" in c["args"] and "openlava" in c["cwd"] for c in makes), makes  # OpenLava build
    assert any(a.startswith("WHAT=cmd/kube-apiserver") for c in makes for a in c["args"]), makes  # Kubernetes
    pips = " ".join(d for d in done if d.startswith("pip "))
    for spec in ("nox>=2024.3", "moto[server]>=5.1,<6", "ray[default]>=2.40,<3"):
        assert spec in pips, (spec, done)
    text = output(runs, 1)
    for line in (
        "[test-all ",  # test-all.sh's own log lines carry its tag
        "image localhost/torchx-python:bookworm ready",
        "build+install done",
        "built Kubernetes v1.20.2-standin",
        "creating venv /var/cache/torchx-moto/venv",
        "creating venv /var/cache/torchx-ray/venv",
    ):
        assert line in text, (line, text)


def test_first_run_starts_every_daemon(runs: Path) -> None:
    started = {c["name"] for c in calls(runs, 1)}
    for daemon in ("dockerd", "munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "lim", "sbatchd"):
        assert daemon in started, daemon
    for daemon in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "ray"):
        assert daemon in started, daemon
    nox = [c["args"] for c in calls(runs, 1) if c["name"] == "python" and c["args"][:2] == ["-m", "nox"]]
    assert ["-m", "nox", "--list"] in nox, nox  # test-all.sh ends by running nox with its arguments


def test_second_run_finds_everything_present(runs: Path) -> None:
    text = output(runs, 2)
    assert (runs / "run2.rc").read_text().strip() == "0", text
    assert installs(runs, 2) == []
    assert "already built in /tmp/torchx-lsf/install" in text, text
    assert "already up (kubelet=docker), nothing to do" in text, text
    assert "all up: docker slurm lsf k8s moto ray" in text, text
