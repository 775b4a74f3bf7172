"""torchx scheduler for Slurm (``-s slurm``).

An app becomes one ``sbatch`` script: a heterogeneous job with one component per replica,
launched by a single ``srun``. The implementation lives in :mod:`torchx_sched_slurm.scheduler`
and is imported only when the scheduler is used.
"""
