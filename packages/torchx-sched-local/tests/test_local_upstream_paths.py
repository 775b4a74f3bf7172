"""Upstream's module paths of the local schedulers and the docker workspace are this package's."""

from __future__ import annotations


def test_upstream_paths() -> None:
    from torchx.schedulers.docker_scheduler import DockerOpts, DockerScheduler, has_docker
    from torchx.schedulers.local_scheduler import LocalOpts, LocalScheduler, create_scheduler
    from torchx.workspace.docker_workspace import DockerWorkspaceMixin
    from torchx_sched_local import docker_scheduler, docker_workspace, local_scheduler

    assert (LocalScheduler, LocalOpts) == (local_scheduler.LocalScheduler, local_scheduler.LocalOpts)
    assert isinstance(create_scheduler("s"), local_scheduler.LocalScheduler)
    assert (DockerScheduler, DockerOpts) == (docker_scheduler.DockerScheduler, docker_scheduler.DockerOpts)
    assert DockerWorkspaceMixin is docker_workspace.DockerWorkspaceMixin
    assert isinstance(has_docker(), bool)
