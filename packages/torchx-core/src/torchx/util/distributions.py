"""Which distribution provides what: the one table core keeps of backend package names, and
the ``pip install`` command that gets one (from PyPI, or from the clone torchx runs from).

Core never imports a backend; it only names the distribution to install when something a
user asks for is missing (``-s slurm``, ``import torchx.schedulers.slurm_scheduler``).
"""

import os

#: scheduler name -> the distribution that provides it
SCHEDULER_DISTRIBUTIONS: dict[str, str] = {
    "local_cwd": "torchx-sched-local",
    "local_docker": "torchx-sched-local[docker]",
    "slurm": "torchx-sched-slurm",
    "kubernetes": "torchx-sched-k8s",
    "kubernetes_mcad": "torchx-sched-k8s",
    "aws_batch": "torchx-sched-aws",
    "aws_sagemaker": "torchx-sched-aws",
    "lsf": "torchx-sched-lsf",
    "ray": "torchx-sched-ray",
    "managed": "torchx-managed",
}

#: upstream TorchX module path -> the distribution whose plugin provides it (a
#: ``torchx_legacy_modules`` registration); a package path covers its submodules
LEGACY_MODULE_DISTRIBUTIONS: dict[str, str] = {
    "torchx.schedulers.local_scheduler": "torchx-sched-local",
    "torchx.schedulers.docker_scheduler": "torchx-sched-local[docker]",
    "torchx.workspace.docker_workspace": "torchx-sched-local[docker]",
    "torchx.schedulers.slurm_scheduler": "torchx-sched-slurm",
    "torchx.workspace.dir_workspace": "torchx-sched-slurm",
    "torchx.schedulers.kubernetes_scheduler": "torchx-sched-k8s",
    "torchx.schedulers.kubernetes_mcad_scheduler": "torchx-sched-k8s",
    "torchx.schedulers.aws_batch_scheduler": "torchx-sched-aws",
    "torchx.schedulers.aws_sagemaker_scheduler": "torchx-sched-aws",
    "torchx.schedulers.lsf_scheduler": "torchx-sched-lsf",
    "torchx.schedulers.ray_scheduler": "torchx-sched-ray",
    "torchx.tracker.backend.fsspec": "torchx-tracker",
    "torchx.tracker.mlflow": "torchx-tracker",
    "torchx.runtime.tracking": "torchx-tracker",
    "torchx.cli.cmd_tracker": "torchx-tracker",
    "torchx.components": "torchx-components",
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


def pip_install(requirement: str) -> str:
    """The command that installs ``requirement`` (a distribution name, maybe with extras): from
    the clone's ``packages/`` when torchx runs from a clone that has it, else from PyPI."""
    name, bracket, extras = requirement.partition("[")
    packages = _clone_packages_dir()
    if packages is not None and os.path.isfile(os.path.join(packages, name, "pyproject.toml")):
        target = f"{packages}/{name}{bracket}{extras}"
    else:
        target = requirement
    quoted = f"'{target}'" if bracket or " " in target else target
    return f"pip install {quoted}"
