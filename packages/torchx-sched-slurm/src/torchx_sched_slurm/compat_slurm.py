"""``torchx.schedulers.slurm_scheduler``: upstream TorchX's module path for ``slurm``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from torchx.schedulers.structured_opts import typed_dict
from torchx.specs.roles import Role
from torchx.specs.runopts import CfgVal

from torchx_sched_slurm.opts import SlurmOpts as _SlurmOpts
from torchx_sched_slurm.scheduler import SlurmScheduler, create_scheduler
from torchx_sched_slurm.script import SbatchRequest as SlurmBatchRequest
from torchx_sched_slurm.script import log_file, resource_opts
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
        """The request of replica ``name`` of ``role`` under the run options ``cfg``: the sizing
        options our scheduler writes (``nomem`` leaves out ``--mem``), the partition/time/...
        options given in ``cfg``, and output files named as our scheduler names them."""
        opts = _SlurmOpts.from_cfg({**cfg, "nomem": nomem})
        sbatch: dict[str, str | None] = dict(resource_opts(role, opts))
        for key in ("partition", "time", "constraint", "qos", "account"):
            value = getattr(opts, key)
            if value is not None:
                sbatch[key] = str(value)
        if opts.exclusive:
            sbatch["exclusive"] = None
        if role.max_retries > 0:
            sbatch["requeue"] = None
        role_name, _, replica = name.rpartition("-")
        replica_id = int(replica) if replica.isdigit() else 0
        srun = {
            "output": log_file("%j", role_name or name, replica_id, "out"),
            "error": log_file("%j", role_name or name, replica_id, "err"),
        }
        return cls(name, role.entrypoint, list(role.args), srun, sbatch, dict(role.env))

    @staticmethod
    def _flags(options: Mapping[str, str | None]) -> list[str]:
        return [f"--{key}" if value is None else f"--{key}={value}" for key, value in options.items()]

    def materialize(self) -> tuple[list[str], list[str]]:
        """``(sbatch arguments, srun arguments + command)`` of this replica; replicas of one job
        are joined with ``:`` (Slurm's heterogeneous-job syntax)."""
        sbatch = [f"--job-name={self.name}", *self._flags(self.sbatch_opts)]
        srun = self._flags(self.srun_opts)
        if self.env:
            srun.append("--export=ALL," + ",".join(f"{k}={v}" for k, v in self.env.items()))
        return sbatch, [*srun, self.entrypoint, *self.args]


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
