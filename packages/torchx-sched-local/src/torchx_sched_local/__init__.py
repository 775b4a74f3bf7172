"""torchx schedulers that run jobs on this machine.

* ``local_cwd``: every replica is an OS process started from the current directory (or
  from ``role.image`` when it names a directory). Jobs are owned by a per-job supervisor
  process and recorded under a per-user state directory, so they outlive the process that
  launched them and any later process can follow, wait for, cancel or delete them.
* ``local_docker``: every replica is a container on the local Docker engine (needs the
  ``docker`` extra: ``pip install 'torchx-sched-local[docker]'``).

The ``docker`` workspace (:class:`torchx_sched_local.docker_workspace.DockerWorkspaceMixin`)
builds a role's workspace into an image; other schedulers get it with
``torchx.workspace.get_workspace_mixin("docker")``.
"""

__version__ = "0.1.0"
