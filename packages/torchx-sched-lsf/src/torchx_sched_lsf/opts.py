"""The ``lsf`` run options and their validation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchx.specs.runopts import InvalidRunConfigException
from torchx.workspace.job_dir import JobDirOpts

#: bsub -W: [hours:]minutes
_TIME_RE = re.compile(r"\d+(:\d{1,2})?")
_NAME_RE = re.compile(r"[^\s'\"\\]+")


@dataclass
class LsfOpts(JobDirOpts):
    """Run options of the ``lsf`` scheduler (passed to ``bsub``)."""

    job_dir: str | None = field(default=None, metadata={"aliases": ("jobdir",)})
    """Directory the job runs in and writes its logs to (created if missing); a workspace is copied into it. Default: the current directory. Also accepted as jobdir, TorchX's lsf name."""
    queue: str | None = field(default=None, metadata={"aliases": ("lsf_queue",)})
    """Queue to submit to (bsub -q; default: the cluster's default queue); also accepted as lsf_queue, TorchX's lsf name."""
    project: str | None = None
    """Project to charge (bsub -P)."""
    user_group: str | None = None
    """User group for fairshare (bsub -G)."""
    resource: str | None = None
    """Resource requirement string (bsub -R), e.g. "select[mem>4000] rusage[mem=4000]"."""
    hosts: int | None = None
    """Number of hosts to spread the slots over (adds span[ptile=...] to -R; 1: span[hosts=1])."""
    time: str | None = None
    """Run time limit: minutes or hours:minutes (bsub -W)."""
    slots: int | None = None
    """Job slots (bsub -n; default: one per replica); replicas are spread evenly over them."""
    container_workdir: str | None = None
    """TorchX 0.7's working directory inside the job's Docker container: not supported, jobs run natively in job_dir."""
    host_network: bool | None = None
    """TorchX 0.7's Docker --net=host: native jobs always use the host's network (true is accepted, false is refused)."""
    shm_size: str | None = None
    """TorchX 0.7's Docker --shm-size: not supported, native jobs share the host's /dev/shm."""

    def validate(self, replicas: int) -> None:
        """Checks every value for an app of ``replicas`` replicas.

        Raises:
            InvalidRunConfigException: which option is wrong and what it expects
        """
        self.check_single_lines()
        self._check_docker_options()
        for key in ("queue", "project", "user_group"):
            value = getattr(self, key)
            if value is not None and not _NAME_RE.fullmatch(value):
                raise InvalidRunConfigException(
                    f"run option {key!r} must be one name without blanks or quotes, got {value!r}", key
                )
        if self.time is not None and not _TIME_RE.fullmatch(self.time):
            raise InvalidRunConfigException(
                f"run option 'time' is not an LSF run limit: {self.time!r}; use minutes (30) or hours:minutes (2:00)",
                "time",
            )
        if self.slots is not None and self.slots < replicas:
            raise InvalidRunConfigException(
                f"run option 'slots' is {self.slots}, fewer than the app's {replicas} replica(s);"
                f" use at least {replicas} (one per replica) or leave it out",
                "slots",
            )
        if self.hosts is not None and self.hosts < 1:
            raise InvalidRunConfigException(f"run option 'hosts' must be at least 1, got {self.hosts}", "hosts")
        if self.hosts is not None and self.resource is not None and "span[" in self.resource:
            raise InvalidRunConfigException(
                "run options 'hosts' and 'resource' both set span[]: use one of them", "hosts"
            )

    def _check_docker_options(self) -> None:
        """Refuses TorchX 0.7's Docker-only options whose behaviour native jobs cannot give."""
        if self.container_workdir is not None:
            raise InvalidRunConfigException(
                "run option 'container_workdir' is not supported: lsf runs jobs natively, not in Docker"
                " containers; the job runs in job_dir (-cfg job_dir=DIR), or cd in the role's entrypoint",
                "container_workdir",
            )
        if self.host_network is False:
            raise InvalidRunConfigException(
                "run option 'host_network=false' is not supported: lsf runs jobs natively, on the host's"
                " network; remove the option",
                "host_network",
            )
        if self.shm_size is not None:
            raise InvalidRunConfigException(
                f"run option 'shm_size' ({self.shm_size!r}) is not supported: lsf runs jobs natively, and"
                " they share the host's /dev/shm (its size is the host's, `df -h /dev/shm`); remove the option",
                "shm_size",
            )

    def slot_count(self, replicas: int) -> int:
        """bsub -n: the ``slots`` option, else one slot per replica."""
        return self.slots if self.slots is not None else replicas

    def resource_string(self, replicas: int) -> str | None:
        """bsub -R: the ``resource`` option plus the span[] that ``hosts`` asks for."""
        parts = [self.resource] if self.resource else []
        if self.hosts == 1:
            parts.append("span[hosts=1]")
        elif self.hosts is not None:
            slots = self.slot_count(replicas)
            parts.append(f"span[ptile={-(-slots // self.hosts)}]")
        return " ".join(parts) or None
