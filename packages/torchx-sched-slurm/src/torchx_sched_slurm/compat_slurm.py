"""``torchx.schedulers.slurm_scheduler``: upstream TorchX's module path for ``slurm``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from torchx.schedulers.structured_opts import typed_dict
from torchx.specs import macros
from torchx.specs.roles import NULL_RESOURCE, Role
from torchx.specs.runopts import CfgVal

from torchx_sched_slurm.opts import SlurmOpts as _SlurmOpts
from torchx_sched_slurm.scheduler import SlurmScheduler, create_scheduler
from torchx_sched_slurm.script import SbatchRequest as SlurmBatchRequest
from torchx_sched_slurm.states import SLURM_STATES


@dataclass
class SlurmReplicaRequest:
    """One replica as ``sbatch``/``srun`` options (TorchX's record): the ``#SBATCH`` options of
    its heterogeneous-job component and the ``srun`` options and command that run it."""

    name: str
    entrypoint: str
    args: list[str]
    srun_opts: dict[str, str]
    sbatch_opts: dict[str, str | None]
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_role(cls, name: str, role: Role, cfg: Mapping[str, CfgVal], nomem: bool) -> SlurmReplicaRequest:
        """The request of replica ``name`` of ``role`` with the options TorchX 0.7 gives it:
        ``--requeue``, the ``partition``/``time``/``constraint`` of ``cfg``, one task per node,
        and from the resource (when set) ``--cpus-per-task``, ``--mem`` (MB; not with ``nomem``)
        and ``--gpus-per-task``; srun writes ``slurm-<job id>-<name>.out``/``.err``, waits 60 s
        for the other tasks after the first ends and kills them when one fails."""
        sbatch: dict[str, str | None] = {"requeue": None}
        sbatch.update({key: str(cfg[key]) for key in _GROUP_OPTIONS if cfg.get(key) is not None})
        sbatch["ntasks-per-node"] = "1"
        res = role.resource
        if res != NULL_RESOURCE:
            for key, amount, wanted in (
                ("cpus-per-task", res.cpu, True),
                ("mem", res.memMB, not nomem),
                ("gpus-per-task", res.gpu, True),
            ):
                if wanted and amount > 0:
                    sbatch.setdefault(key, str(amount))
        srun = {
            "output": f"slurm-{macros.app_id}-{name}.out",
            "error": f"slurm-{macros.app_id}-{name}.err",
            "wait": "60",
            "kill-on-bad-exit": "1",
        }
        return cls(name, role.entrypoint, list(role.args), srun, sbatch, dict(role.env))

    @staticmethod
    def _flags(options: Mapping[str, str | None]) -> list[str]:
        return [f"--{key}" if value is None else f"--{key}={value}" for key, value in options.items()]

    def materialize(self) -> tuple[list[str], list[str]]:
        """``(sbatch arguments, srun arguments + command)`` of this replica; replicas of one job
        are joined with ``:`` (Slurm's heterogeneous-job syntax). Each srun word is shell-quoted,
        and ``${app_id}`` in it becomes ``"$SLURM_JOB_ID"``."""
        sbatch = [f"--job-name={self.name}", *self._flags(self.sbatch_opts)]
        srun = self._flags(self.srun_opts)
        if self.env:
            srun.append("--export=ALL," + ",".join(f"{k}={v}" for k, v in self.env.items()))
        return sbatch, [_with_job_id(word) for word in (*srun, self.entrypoint, *self.args)]


def _with_job_id(word: str) -> str:
    """``word`` quoted for the shell, with each ``${app_id}`` expanding to the Slurm job id."""
    return '"$SLURM_JOB_ID"'.join(shlex.quote(part) for part in word.split(macros.app_id))


#: the run options TorchX puts on each replica's ``#SBATCH`` group
_GROUP_OPTIONS = ("partition", "time", "constraint")


#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
SlurmOpts = typed_dict(_SlurmOpts, "SlurmOpts", __name__)

__all__ = [
    "SLURM_STATES",
    "SlurmBatchRequest",
    "SlurmOpts",
    "SlurmReplicaRequest",
    "SlurmScheduler",
    "create_scheduler",
]
