"""``torchx.schedulers.docker_scheduler`` as TorchX 0.7 documents it: ``DockerContainer.kwargs``
and ``Resource.devices`` reaching the container."""

from __future__ import annotations

import pytest
from torchx import specs

pytest.importorskip("torchx_sched_local")
pytest.importorskip("docker")

from torchx.schedulers.docker_scheduler import DockerContainer, DockerJob, create_scheduler


def dryrun(resource: specs.Resource) -> DockerJob:
    role = specs.Role("trainer", image="python:3.11", entrypoint="python", args=["-c", "pass"], resource=resource)
    job = create_scheduler("compat").submit_dryrun(specs.AppDef("a", roles=[role]), {}).request
    assert isinstance(job, DockerJob)
    return job


def test_container_kwargs_are_create_arguments() -> None:
    (container,) = dryrun(specs.resource(cpu=2, memMB=1024)).containers
    assert isinstance(container, DockerContainer)
    kwargs = container.kwargs
    assert kwargs["hostname"] and kwargs["name"]
    assert kwargs["environment"]["TORCHX_ROLE_NAME"] == "trainer"
    assert kwargs["mem_limit"] == "1024m"
    assert kwargs["nano_cpus"] == 2_000_000_000


def test_efa_and_neuron_devices_reach_the_container() -> None:
    res = specs.Resource(
        cpu=1, gpu=0, memMB=512, devices={"vpc.amazonaws.com/efa": 2, "aws.amazon.com/neurondevice": 1}
    )
    (container,) = dryrun(res).containers
    devices = container.kwargs["devices"]
    assert "/dev/infiniband/uverbs0:/dev/infiniband/uverbs0:rwm" in devices
    assert "/dev/infiniband/uverbs1:/dev/infiniband/uverbs1:rwm" in devices
    assert "/dev/neuron0:/dev/neuron0:rwm" in devices
