"""torchx scheduler for Ray (``-s ray``).

An app becomes one Ray job submitted through the Jobs API; its driver
(:mod:`torchx_sched_ray.torchx_ray_driver`) starts one actor per replica in a placement
group. The implementation lives in :mod:`torchx_sched_ray.scheduler` and is imported only
when the scheduler is used; ``ray`` itself only when the cluster is contacted.
"""
