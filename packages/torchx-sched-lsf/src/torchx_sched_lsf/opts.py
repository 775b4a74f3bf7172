"""The ``lsf`` run options and their validation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchx.specs.runopts import InvalidRunConfigException
from torchx.workspace.job_dir import JobDirOpts

#: bsub -W: [hours:]minutes
_TIME_RE = re.compile(r"\d+(:\d{1,2})?")
_NAME_RE = re.compile(r"[^\s'\"\\]+")


@dataclass
class LsfOpts(JobDirOpts):
    """Run options of the ``lsf`` scheduler (passed to ``bsub``)."""

    queue: str | None = None
    """Queue to submit to (bsub -q; default: the cluster's default queue)."""
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

    def validate(self, replicas: int) -> None:
        """Checks every value for an app of ``replicas`` replicas.

        Raises:
            InvalidRunConfigException: which option is wrong and what it expects
        """
        self.check_single_lines()
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
