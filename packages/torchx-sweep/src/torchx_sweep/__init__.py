"""torchx sweep: run a component over a grid, random samples or a file of arguments, on any scheduler.

Trials run as one native job array where the scheduler has arrays (``slurm``, ``lsf``, ``aws_batch``),
else a detached driver submits them as slots free up (``local_cwd``, ``kubernetes``, ...).

    from torchx_sweep import run_sweep
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx_sweep.api import Sweep, TrialStatus, run_sweep
    from torchx_sweep.params import SweepSpecError

__all__ = ["Sweep", "SweepSpecError", "TrialStatus", "run_sweep"]


def __getattr__(name: str) -> object:
    if name in ("Sweep", "TrialStatus", "run_sweep"):
        from torchx_sweep import api

        return getattr(api, name)
    if name == "SweepSpecError":
        from torchx_sweep.params import SweepSpecError

        return SweepSpecError
    raise AttributeError(name)
