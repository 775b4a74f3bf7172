"""torchx scheduler for IBM Spectrum LSF and OpenLava (``-s lsf``).

An app becomes one ``bsub`` job whose script starts every replica. The implementation
lives in :mod:`torchx_sched_lsf.scheduler` and is imported only when the scheduler is used.
"""
