"""``torchx.schedulers.docker_scheduler``: upstream TorchX's module path for ``local_docker``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_local.docker_scheduler import (
    LABEL_APP_ID,
    LABEL_REPLICA_ID,
    LABEL_ROLE_NAME,
    DockerContainer,
    DockerJob,
    DockerOpts,
    DockerScheduler,
    create_scheduler,
)
from torchx_sched_local.docker_workspace import LABEL_VERSION, docker_client


def has_docker() -> bool:
    """True when the docker SDK is installed and the engine it finds answers."""
    try:
        docker_client().ping()
    except Exception:
        return False
    return True


__all__ = [
    "LABEL_APP_ID",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_NAME",
    "LABEL_VERSION",
    "DockerContainer",
    "DockerJob",
    "DockerOpts",
    "DockerScheduler",
    "create_scheduler",
    "has_docker",
]
