"""Which distribution provides what: the one table core keeps of backend package names.

Core never imports a backend; it only names the distribution to install when something a
user asks for is missing (``-s slurm``, ``import torchx.schedulers.slurm_scheduler``).
"""

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
