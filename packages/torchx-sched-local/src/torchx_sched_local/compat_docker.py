"""``torchx.schedulers.docker_scheduler``: upstream TorchX's module path for ``local_docker``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_local.docker_scheduler import (
    LABEL_APP_ID,
    LABEL_REPLICA_ID,
    LABEL_ROLE_NAME,
    DockerContainer,
    DockerJob,
    DockerScheduler,
    create_scheduler,
)
from torchx_sched_local.docker_scheduler import DockerOpts as _DockerOpts
from torchx_sched_local.docker_workspace import LABEL_VERSION, docker_client

if TYPE_CHECKING:
    from docker import DockerClient

#: upstream's shared bridge network for all ``local_docker`` apps. Our scheduler instead
#: creates one network per app (``torchx-<app_id>``) unless ``DockerOpts.network`` names one;
#: pass ``network=NETWORK`` after ``ensure_network()`` to share this one as upstream did.
NETWORK = "torchx"

#: the run options as TorchX declares them: a TypedDict (``DockerOpts({"k": v})`` or ``DockerOpts(k=v)``)
DockerOpts = typed_dict(_DockerOpts, "DockerOpts", __name__)


def ensure_network(client: DockerClient | None = None) -> None:
    """Creates the bridge network ``NETWORK`` on the engine unless it already exists.

    Args:
        client: the docker SDK client to use (default: one for the engine the environment names)
    """
    from docker.errors import APIError

    client = client or docker_client()
    if any(n.name == NETWORK for n in client.networks.list(names=[NETWORK])):  # names= matches substrings
        return
    try:
        client.networks.create(NETWORK, driver="bridge")
    except APIError as e:
        if "already exists" not in str(e):  # another process created it meanwhile
            raise


def has_docker() -> bool:
    """True when the docker SDK is installed and the engine it finds answers."""
    try:
        docker_client().ping()
    except Exception:
        return False
    return True


__all__ = [
    "NETWORK",
    "LABEL_APP_ID",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_NAME",
    "LABEL_VERSION",
    "DockerContainer",
    "DockerJob",
    "DockerOpts",
    "DockerScheduler",
    "create_scheduler",
    "ensure_network",
    "has_docker",
]
