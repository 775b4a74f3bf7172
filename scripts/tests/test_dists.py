"""Built distributions, installed by name, as the README tells users to.

scripts/build-dists.sh builds every package (or $TORCHX_DIST_DIR holds them already); then, in a
fresh venv each, exactly `pip install --find-links dist torchx-core torchx-sched-slurm` and
`pip install --find-links dist torchx-core torchx-sched-local torchx-components`, and jobs run
from what got installed. The installed files must be the ones of the local wheels (not a
same-named distribution from an index). `nox -s dists` runs this with the services' env: the
Slurm job then runs on the live cluster (required under TORCHX_REQUIRE_LIVE=1).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPONENT = '''
import torchx.specs as specs


def hello(msg: str = "hello") -> specs.AppDef:
    """Prints msg."""
    role = specs.Role(name="hello", image="", entrypoint="echo", args=[msg], resource=specs.Resource(cpu=1, gpu=0, memMB=256))
    return specs.AppDef(name="hello", roles=[role])
'''
INSTALLED_RECORDS = """
import json, importlib.metadata as md
out = {}
for d in md.distributions():
    name = d.metadata["Name"]
    if name.startswith("torchx"):
        out[name] = sorted(line for line in (d.read_text("RECORD") or "").splitlines() if line.split(",")[1:2] != [""])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding `dist/` with every package built."""
    given = os.environ.get("TORCHX_DIST_DIR")
    if given:
        root = tmp_path_factory.mktemp("given")
        (root / "dist").symlink_to(Path(given).resolve())
        return root
    root = tmp_path_factory.mktemp("built")
    subprocess.run(
        ["bash", str(REPO / "scripts" / "build-dists.sh"), str(root / "dist")],
        check=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    return root


def run(cmd: list[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, **kw)  # type: ignore[call-overload]


def install_by_name(tmp_path: Path, dist_dir: Path, names: list[str]) -> Path:
    """A fresh venv with exactly `pip install --find-links dist NAMES` run in dist_dir; its bin dir."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = run([str(venv / "bin" / "pip"), "install", "--find-links", "dist", *names], cwd=dist_dir)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return venv / "bin"


def wheel_record(dist: Path, name: str) -> list[str]:
    (wheel,) = dist.glob(f"{name.replace('-', '_')}-*.whl")
    with zipfile.ZipFile(wheel) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        lines = z.read(record).decode().splitlines()
    # the package's own files (pip rewrites the dist-info's and adds the scripts it generates)
    return sorted(line for line in lines if line.split(",")[1:2] != [""] and ".dist-info/" not in line)


def assert_local_builds_installed(bin_dir: Path, dist: Path, names: list[str]) -> None:
    """Only NAMES of torchx, each with the files (and hashes) of the wheel in dist/."""
    out = run([str(bin_dir / "python"), "-c", INSTALLED_RECORDS], cwd=dist)
    installed = json.loads(out.stdout)
    assert sorted(installed) == sorted(names)
    for name in names:
        missing = set(wheel_record(dist, name)) - set(installed[name])
        assert not missing, f"{name} was not installed from {dist}: {sorted(missing)[:3]}"


def test_wheel_record_hashes_are_what_pip_checks(dist_dir: Path) -> None:
    """The RECORD comparison below is meaningful: a wheel's RECORD hashes its files."""
    (wheel,) = (dist_dir / "dist").glob("torchx_core-*.whl")
    with zipfile.ZipFile(wheel) as z:
        path, digest, _ = next(line.split(",") for line in wheel_record(dist_dir / "dist", "torchx-core"))
        expected = base64.urlsafe_b64encode(hashlib.sha256(z.read(path)).digest()).rstrip(b"=").decode()
    assert digest == f"sha256={expected}"


def test_core_and_slurm_by_name(tmp_path: Path, dist_dir: Path) -> None:
    names = ["torchx-core", "torchx-sched-slurm"]
    bin_dir = install_by_name(tmp_path, dist_dir, names)
    assert_local_builds_installed(bin_dir, dist_dir / "dist", names)
    torchx = str(bin_dir / "torchx")

    opts = run([torchx, "runopts", "slurm"], cwd=tmp_path)
    assert opts.returncode == 0 and "partition" in opts.stdout, opts.stdout + opts.stderr
    job = tmp_path / "job"
    job.mkdir()
    (job / "comp.py").write_text(COMPONENT)
    dry = run([torchx, "run", "--dryrun", "-s", "slurm", "./comp.py:hello", "--msg", "hi from the wheels"], cwd=job)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "#SBATCH" in dry.stdout and "hi from the wheels" in dry.stdout, dry.stdout

    if os.environ.get("TORCHX_TEST_SLURM") != "1":
        if os.environ.get("TORCHX_REQUIRE_LIVE") == "1":
            pytest.fail("TORCHX_TEST_SLURM is not set: start Slurm (scripts/backends/services.sh up slurm)")
        return
    # a real job on the live cluster, from the installed wheels
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    sub = run([torchx, "run", "-s", "slurm", "./comp.py:hello", "--msg", "hi from the wheels"], cwd=job, env=env)
    assert sub.returncode == 0, sub.stdout + sub.stderr
    handle = sub.stdout.strip().splitlines()[0]
    assert handle.startswith("slurm://"), sub.stdout
    waited = run([torchx, "wait", handle, "--timeout", "120"], cwd=job, env=env)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    log = run([torchx, "log", handle], cwd=job, env=env)
    assert "hi from the wheels" in log.stdout, log.stdout + log.stderr


def test_core_local_and_components_by_name(tmp_path: Path, dist_dir: Path) -> None:
    names = ["torchx-core", "torchx-sched-local", "torchx-components"]
    bin_dir = install_by_name(tmp_path, dist_dir, names)
    assert_local_builds_installed(bin_dir, dist_dir / "dist", names)
    echo = run([str(bin_dir / "torchx"), "run", "-s", "local_cwd", "utils.echo", "--msg", "hello torchx"], cwd=tmp_path)
    assert echo.returncode == 0, echo.stdout + echo.stderr
    assert echo.stdout.startswith("local_cwd://torchx/echo-"), echo.stdout
    assert "hello torchx" in echo.stdout, echo.stdout
