"""Which distribution provides what: the one table core keeps of backend package names, and
the ``pip install`` command that gets one (from PyPI, or from the clone torchx runs from).

Core never imports a backend; it only names the distribution to install when something a
user asks for is missing (``-s slurm``, ``import torchx.schedulers.slurm_scheduler``).
"""

import os

# every distribution core names (in "install X" hints), spelled once
CORE = "torchx-core"
LOCAL = "torchx-sched-local"
LOCAL_DOCKER = f"{LOCAL}[docker]"
SLURM = "torchx-sched-slurm"
K8S = "torchx-sched-k8s"
AWS = "torchx-sched-aws"
LSF = "torchx-sched-lsf"
RAY = "torchx-sched-ray"
COMPONENTS = "torchx-components"
TRACKER = "torchx-tracker"
MANAGED = "torchx-managed"

#: scheduler name -> the distribution that provides it
SCHEDULER_DISTRIBUTIONS: dict[str, str] = {
    "local_cwd": LOCAL,
    "local_docker": LOCAL_DOCKER,
    "slurm": SLURM,
    "kubernetes": K8S,
    "kubernetes_mcad": K8S,
    "aws_batch": AWS,
    "aws_sagemaker": AWS,
    "lsf": LSF,
    "ray": RAY,
    "managed": MANAGED,
}

#: upstream TorchX module path -> the distribution whose plugin provides it (a
#: ``torchx_legacy_modules`` registration); a package path covers its submodules
LEGACY_MODULE_DISTRIBUTIONS: dict[str, str] = {
    "torchx.schedulers.local_scheduler": LOCAL,
    "torchx.schedulers.docker_scheduler": LOCAL_DOCKER,
    "torchx.workspace.docker_workspace": LOCAL_DOCKER,
    "torchx.schedulers.slurm_scheduler": SLURM,
    "torchx.workspace.dir_workspace": SLURM,
    "torchx.schedulers.kubernetes_scheduler": K8S,
    "torchx.schedulers.kubernetes_mcad_scheduler": K8S,
    "torchx.schedulers.aws_batch_scheduler": AWS,
    "torchx.schedulers.aws_sagemaker_scheduler": AWS,
    "torchx.schedulers.lsf_scheduler": LSF,
    "torchx.schedulers.ray_scheduler": RAY,
    "torchx.tracker.backend.fsspec": TRACKER,
    "torchx.tracker.mlflow": TRACKER,
    "torchx.runtime.tracking": TRACKER,
    "torchx.cli.cmd_tracker": TRACKER,
    "torchx.components": COMPONENTS,
}


def _clone_packages_dir() -> str | None:
    """The ``packages/`` directory of the torchx clone in use: the current directory's, or the one
    torchx-core was installed from (pip records it in ``direct_url.json``); None if neither."""
    here = os.path.join(os.getcwd(), "packages")
    if os.path.isfile(os.path.join(here, "torchx-core", "pyproject.toml")):
        return "./packages"
    try:
        import json
        from importlib.metadata import distribution
        from urllib.parse import unquote, urlparse

        text = distribution("torchx-core").read_text("direct_url.json")
        url = json.loads(text)["url"] if text else ""
    except Exception:  # not installed by pip from a directory
        return None
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    core = unquote(parsed.path).rstrip("/")
    if os.path.basename(core) != "torchx-core" or not os.path.isfile(os.path.join(core, "pyproject.toml")):
        return None
    return os.path.dirname(core)


def pip_install(requirement: str, upgrade: bool = False) -> str:
    """The command that installs ``requirement`` (a distribution name, maybe with extras): from
    the clone's ``packages/`` when torchx runs from a clone that has it, else from PyPI
    (``upgrade``: to its newest version)."""
    name, bracket, extras = requirement.partition("[")
    packages = _clone_packages_dir()
    if packages is not None and os.path.isfile(os.path.join(packages, name, "pyproject.toml")):
        target = f"{packages}/{name}{bracket}{extras}"
    else:
        target = requirement
    quoted = f"'{target}'" if bracket or " " in target else target
    return f"pip install {'-U ' if upgrade else ''}{quoted}"
