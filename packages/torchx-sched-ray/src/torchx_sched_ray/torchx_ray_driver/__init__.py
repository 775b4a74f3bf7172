"""The driver of a torchx app on Ray, shipped with each job (``runtime_env`` ``py_modules``).

It runs on the cluster without torchx; ``python -m torchx_ray_driver`` runs
:func:`torchx_ray_driver.driver.main`. Importing this package imports nothing.
"""
